#include "memtrail/analysis/oom_report.hpp"
#include "memtrail/analysis/outside_accounting.hpp"

#include <algorithm>
#include <map>
#include <stdexcept>

#include "detail/oom_verdict.hpp"
#include "memtrail/rules/size_rules.hpp"

namespace memtrail::analysis {
namespace {

using snapshot::block_state;

// The cheapest run of neighbouring blocks in `seg` spanning at least `requested` bytes.
bool cheapest_run(const snapshot::segment& seg, uint64_t requested, oom_blocker& out) {
    const auto& blocks = seg.blocks;
    bool found = false;
    uint64_t span = 0;
    uint64_t live = 0;
    size_t first = 0;
    for (size_t last = 0; last < blocks.size(); ++last) {
        span += blocks[last].size;
        live += blocks[last].state != block_state::inactive ? blocks[last].size : 0;
        // Shrink from the left while the run still spans the request.
        while (first < last && span - blocks[first].size >= requested) {
            span -= blocks[first].size;
            live -= blocks[first].state != block_state::inactive ? blocks[first].size : 0;
            ++first;
        }
        if (span >= requested && live > 0 && (!found || live < out.live_bytes)) {
            found = true;
            out.segment_address = seg.address;
            out.range_address = blocks[first].address;
            out.range_size = span;
            out.live_bytes = live;
            out.blocks.clear();
            for (size_t i = first; i <= last; ++i) {
                if (blocks[i].state != block_state::inactive) {
                    out.blocks.push_back(blocks[i]);
                }
            }
        }
    }
    return found;
}

bool has_free_block(const snapshot::segment& seg) {
    return std::any_of(seg.blocks.begin(), seg.blocks.end(),
                       [](const snapshot::block& b) { return b.state == block_state::inactive; });
}

bool all_pending_or_free(const snapshot::segment& seg) {
    bool any_pending = false;
    for (const auto& blk : seg.blocks) {
        if (blk.state == block_state::active_allocated) {
            return false;
        }
        any_pending = any_pending || blk.state == block_state::active_pending_free;
    }
    return any_pending;
}

// The fraction the recorder keeps among the settings, when the program set one.
double recorded_fraction(const snapshot::allocator_settings& settings) {
    auto it = settings.other.find("per_process_memory_fraction");
    if (it == settings.other.end()) {
        return 0.0;
    }
    try {
        return std::stod(it->second);
    } catch (const std::exception&) {
        return 0.0;
    }
}

// The most the trace ever reserved: what it held at `entry` plus the largest rise above that
// the trace's segment entries show, before or after it.
uint64_t peak_reserved_of(const device_model& model, size_t entry, uint64_t reserved_at_entry) {
    int64_t running = 0, peak = 0, at_entry = 0;
    for (size_t i = 0; i < model.event_count(); ++i) {
        const snapshot::trace_entry& e = model.entry(i);
        if (e.kind == snapshot::action::segment_alloc || e.kind == snapshot::action::segment_map) {
            running += static_cast<int64_t>(e.size);
        } else if (e.kind == snapshot::action::segment_free ||
                   e.kind == snapshot::action::segment_unmap) {
            running -= static_cast<int64_t>(e.size);
        }
        peak = std::max(peak, running);
        if (i == entry) {
            at_entry = running;
        }
    }
    const int64_t rise = std::max<int64_t>(peak - at_entry, 0);
    return reserved_at_entry + static_cast<uint64_t>(rise);
}

bool wholly_free(const snapshot::segment& seg) {
    return std::all_of(seg.blocks.begin(), seg.blocks.end(),
                       [](const snapshot::block& b) { return b.state == block_state::inactive; });
}

// The private pool of a segment at the OOM: the snapshot's own, else its stream's; a segment
// the OOM left wholly cached was in a private pool still held (an OOM gives back every other
// cached segment), even when nothing says which.
std::optional<oom_private_pool> private_pool_of(const snapshot::segment& seg,
                                                const segment_pools& pools) {
    oom_private_pool found;
    const auto resolved = pools.resolve(seg);
    if (resolved && !resolved->pool.is_default()) {
        found.pool = resolved->pool;
        found.owner = pools.owner(resolved->pool);
        found.inferred = resolved->inferred;
    } else if ((!resolved || resolved->inferred) && !seg.is_expandable && wholly_free(seg)) {
        found.inferred = true;  // its stream's other segments in the default pools say nothing
    } else {
        return std::nullopt;
    }
    found.stream = seg.stream;
    return found;
}

void add_private_segment(oom_report& report, const snapshot::segment& seg,
                         const oom_private_pool& pool) {
    auto it = std::find_if(
        report.private_pools.begin(), report.private_pools.end(),
        [&](const oom_private_pool& p) { return p.pool == pool.pool && p.stream == pool.stream; });
    if (it == report.private_pools.end()) {
        it = report.private_pools.insert(report.private_pools.end(), pool);
    }
    it->inferred = it->inferred || pool.inferred;
    ++it->segments;
    it->reserved += seg.total_size;
    for (const auto& blk : seg.blocks) {
        (blk.state == block_state::inactive ? it->free : it->allocated) += blk.size;
    }
    if (wholly_free(seg)) {
        it->releasable += seg.total_size;
        report.private_pool_releasable += seg.total_size;
    }
}

}  // namespace

bool oom_blocker::only_pending_frees() const {
    return std::all_of(blocks.begin(), blocks.end(), [](const snapshot::block& b) {
        return b.state == block_state::active_pending_free;
    });
}

std::string_view verdict_name(oom_verdict verdict) {
    switch (verdict) {
        case oom_verdict::fragmentation:
            return "fragmentation";
        case oom_verdict::pending_cross_stream_frees:
            return "pending cross-stream frees";
        case oom_verdict::capacity:
            return "capacity";
        case oom_verdict::memory_cap:
            return "memory cap";
        case oom_verdict::outside_allocator:
            return "outside this allocator";
        case oom_verdict::private_pools:
            return "private pools";
    }
    return "unknown";
}

std::string_view device_total_source_name(device_total_source source) {
    switch (source) {
        case device_total_source::snapshot:
            return "snapshot";
        case device_total_source::option:
            return "--device-memory";
        case device_total_source::at_least:
            return "at least reserved + free";
    }
    return "unknown";
}

std::string_view verdict_key(oom_verdict verdict) {
    switch (verdict) {
        case oom_verdict::fragmentation:
            return "fragmentation";
        case oom_verdict::pending_cross_stream_frees:
            return "pending_cross_stream_frees";
        case oom_verdict::capacity:
            return "capacity";
        case oom_verdict::memory_cap:
            return "memory_cap";
        case oom_verdict::outside_allocator:
            return "outside_allocator";
        case oom_verdict::private_pools:
            return "private_pools";
    }
    return "unknown";
}

std::vector<size_t> oom_entries(const device_model& model) {
    std::vector<size_t> out;
    for (size_t i = 0; i < model.event_count(); ++i) {
        if (model.entry(i).kind == snapshot::action::oom) {
            out.push_back(i);
        }
    }
    return out;
}

oom_report analyze_oom(const device_model& model, size_t entry, const oom_options& options) {
    const size_t max_blockers = options.max_blockers;
    if (entry >= model.event_count() || model.entry(entry).kind != snapshot::action::oom) {
        throw std::invalid_argument("trace entry " + std::to_string(entry) +
                                    " is not an oom entry");
    }
    const snapshot::trace_entry& e = model.entry(entry);
    const memory_state state = model.state_after(entry);

    oom_report report;
    report.entry = entry;
    report.device = model.device();
    report.time_ns = e.time_ns;
    report.requested = e.size;
    report.stream = e.stream;
    report.is_large = !size_rules::is_small_request(e.size);
    report.stack = e.stack;
    report.device_free = e.address;
    for (const auto& properties : model.source().info.devices) {
        if (properties.device == model.device()) {
            report.device_total = properties.total_memory;
        }
    }
    if (const auto* row = accounting_for_oom(model.source(), model.device(), e.time_ns)) {
        report.accounting = *row;
    }
    report.segment_size = size_rules::segment_size_for(report.requested);
    report.totals = totals_of(state);
    report.fragmentation = report.totals.fragmentation();

    const segment_pools known_pools(model.source(), model.device());
    std::map<std::pair<bool, uint64_t>, free_space> pools;
    uint64_t releasable_after_sync = 0;  // segments holding only pending and free blocks
    std::map<snapshot::stack_id, oom_holder> holders;
    for (const auto& seg : state.segments) {
        free_space& pool = pools[{seg.is_large, seg.stream}];
        pool.is_large = seg.is_large;
        pool.stream = seg.stream;
        for (const auto& blk : seg.blocks) {
            if (blk.state == block_state::inactive) {
                pool.free += blk.size;
                pool.largest_free = std::max(pool.largest_free, blk.size);
                ++pool.free_blocks;
            } else if (blk.state == block_state::active_pending_free) {
                pool.pending_free += blk.size;
            }
        }
        if (all_pending_or_free(seg)) {
            releasable_after_sync += seg.total_size;
        }
        const auto private_pool = private_pool_of(seg, known_pools);
        if (private_pool) {
            add_private_segment(report, seg, *private_pool);
        }
        for (const auto& blk : seg.blocks) {
            if (blk.state != block_state::inactive) {
                continue;
            }
            if (private_pool) {
                report.private_pool_free += blk.size;
            } else if (seg.is_large == report.is_large && seg.stream == report.stream) {
                report.usable_free += blk.size;
            }
        }
        for (const auto& blk : seg.blocks) {
            if (blk.state == block_state::active_allocated) {
                oom_holder& holder = holders[blk.stack];
                holder.stack = blk.stack;
                holder.bytes += blk.size;
                ++holder.blocks;
            }
        }
        oom_blocker blocker;
        if (seg.is_large == report.is_large && seg.stream == report.stream && has_free_block(seg) &&
            cheapest_run(seg, report.requested, blocker)) {
            report.blockers.push_back(std::move(blocker));
        }
    }
    for (const auto& [key, pool] : pools) {
        report.free_by_pool.push_back(pool);
    }
    std::sort(
        report.free_by_pool.begin(), report.free_by_pool.end(),
        [](const free_space& a, const free_space& b) { return a.largest_free > b.largest_free; });
    std::stable_sort(
        report.blockers.begin(), report.blockers.end(),
        [](const oom_blocker& a, const oom_blocker& b) { return a.live_bytes < b.live_bytes; });
    if (report.blockers.size() > max_blockers) {
        report.blockers.resize(max_blockers);
    }
    for (const auto& [stack, holder] : holders) {
        report.holders.push_back(holder);
    }
    std::stable_sort(report.holders.begin(), report.holders.end(),
                     [](const oom_holder& a, const oom_holder& b) { return a.bytes > b.bytes; });
    if (report.holders.size() > max_blockers) {
        report.holders.resize(max_blockers);
    }

    std::stable_sort(
        report.private_pools.begin(), report.private_pools.end(),
        [](const oom_private_pool& a, const oom_private_pool& b) { return a.free > b.free; });
    detail::verdict_inputs inputs;
    inputs.releasable_after_sync = releasable_after_sync;
    inputs.peak_reserved = peak_reserved_of(model, entry, report.totals.reserved);
    inputs.fraction = options.memory_fraction > 0.0 ? options.memory_fraction
                                                    : recorded_fraction(model.source().settings);
    inputs.given_device_total = options.device_total;
    detail::decide_verdict(report, inputs);
    return report;
}

}  // namespace memtrail::analysis
