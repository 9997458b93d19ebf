#include "memtrail/analysis/oom_report.hpp"

#include <algorithm>
#include <map>
#include <stdexcept>

#include "memtrail/analysis/size_text.hpp"
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

// The cause, checked in the order that explains the most: a free that only waits on other
// streams, the allocator's own cap, memory cached where the request could not use it (private
// pools, or in pieces: a setting fixes those), memory other users hold, and last this
// process's own live memory.
void decide_verdict(oom_report& r, uint64_t releasable_after_sync,
                    const snapshot::allocator_settings& settings) {
    const std::string asked = format_bytes(r.requested);
    const uint64_t reserved = r.totals.reserved;
    if (r.device_total) {
        const uint64_t accounted = r.device_free + reserved;
        r.outside = r.device_total > accounted ? r.device_total - accounted : 0;
        r.outside_known = true;
    } else {
        r.unknowns.push_back(
            "the device's total memory (a PyTorch snapshot does not record it; give "
            "--device-memory): memory held outside this allocator cannot be measured");
    }
    const double fraction = recorded_fraction(settings);
    if (fraction > 0.0 && r.device_total) {
        r.allowed = static_cast<uint64_t>(fraction * static_cast<double>(r.device_total));
    }
    const bool pending_blocker =
        std::any_of(r.blockers.begin(), r.blockers.end(),
                    [](const oom_blocker& b) { return b.only_pending_frees(); });
    const bool over_cap = r.allowed && reserved + r.segment_size > r.allowed;
    const bool device_had_room = r.device_free >= r.segment_size;

    if (pending_blocker ||
        (r.device_free < r.requested && r.device_free + releasable_after_sync >= r.requested)) {
        r.verdict = oom_verdict::pending_cross_stream_frees;
        r.explanation = "The " + asked +
                        " request would have fit if blocks already freed had not still been in "
                        "use by other streams (" +
                        format_bytes(r.totals.pending_free) +
                        " pending). Synchronize the streams that use them, or call record_stream "
                        "less.";
    } else if (over_cap || device_had_room) {
        r.verdict = oom_verdict::memory_cap;
        r.cap_inferred = !over_cap;
        r.explanation =
            "The device still had " + format_bytes(r.device_free) + " free, enough for the " +
            format_bytes(r.segment_size) + " segment this request needed, but the allocator " +
            (over_cap ? "was capped at " + format_bytes(r.allowed) +
                            " (the per-process memory "
                            "fraction) and held " +
                            format_bytes(reserved)
                      : "refused on a limit of its own (most likely "
                        "torch.cuda.set_per_process_memory_fraction; the snapshot does not "
                        "record it) while holding " +
                            format_bytes(reserved)) +
            ". Raise or remove the cap, or reduce what is live.";
    } else if (r.private_pool_free >= r.requested && r.usable_free < r.requested) {
        r.verdict = oom_verdict::private_pools;
        r.explanation = format_bytes(r.private_pool_free) +
                        " was cached free in private pools (CUDA graphs, torch.cuda.MemPool), "
                        "which serve only allocations made to them, and would have covered the " +
                        asked +
                        " request. Release graphs or pools no longer needed, or share "
                        "one pool between graphs.";
    } else if (r.usable_free >= r.requested) {
        r.verdict = oom_verdict::fragmentation;
        r.explanation = format_bytes(r.usable_free) +
                        " was cached free in this pool and stream, enough for " + asked +
                        " had it been in one piece, but it was cut into " +
                        std::to_string(r.totals.free_blocks) + " free blocks, the largest " +
                        format_bytes(r.totals.largest_free) +
                        ", inside segments still in use (the device had " +
                        format_bytes(r.device_free) + " free).";
    } else if (r.outside_known && r.outside + r.device_free >= r.segment_size &&
               r.outside >= reserved) {
        r.verdict = oom_verdict::outside_allocator;
        r.explanation =
            format_bytes(r.outside) + " of the device's " + format_bytes(r.device_total) +
            " were held outside this allocator (other processes, NCCL, cuBLAS workspaces, the "
            "CUDA context) against " +
            format_bytes(reserved) + " reserved by it; the device had " +
            format_bytes(r.device_free) + " free for a " + format_bytes(r.segment_size) +
            " segment. Find who holds that memory (nvidia-smi), or run with less beside it.";
    } else {
        r.verdict = oom_verdict::capacity;
        r.explanation =
            "Live allocations of this process hold " + format_bytes(r.totals.allocated) + " of " +
            format_bytes(reserved) + " reserved; the device had " + format_bytes(r.device_free) +
            " free and the cache " + format_bytes(r.totals.free) +
            (r.outside_known
                 ? ", and " + format_bytes(r.outside) + " was held outside this allocator"
                 : "") +
            ": the memory is really in use. Reduce what is live at this point (batch "
            "size, activations, cached tensors).";
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
    if (options.device_total) {
        report.device_total = options.device_total;
    }
    report.segment_size = size_rules::segment_size_for(report.requested);
    report.totals = totals_of(state);
    report.fragmentation = report.totals.fragmentation();

    // Private pools are known by the final snapshot's segments that were already there.
    std::map<uint64_t, bool> private_segment;
    for (const auto& seg : model.source().segments) {
        if (seg.device == model.device()) {
            private_segment[seg.address] = seg.pool_id_first != 0 || seg.pool_id_second != 0;
        }
    }
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
        const auto known = private_segment.find(seg.address);
        const bool in_private_pool = known != private_segment.end() && known->second;
        for (const auto& blk : seg.blocks) {
            if (blk.state != block_state::inactive) {
                continue;
            }
            if (in_private_pool) {
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

    decide_verdict(report, releasable_after_sync, model.source().settings);
    return report;
}

}  // namespace memtrail::analysis
