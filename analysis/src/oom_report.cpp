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

oom_report analyze_oom(const device_model& model, size_t entry, size_t max_blockers) {
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
    report.totals = totals_of(state);
    report.fragmentation = report.totals.fragmentation();

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

    const bool pending_blocker =
        std::any_of(report.blockers.begin(), report.blockers.end(),
                    [](const oom_blocker& b) { return b.only_pending_frees(); });
    const std::string asked = format_bytes(report.requested);
    if (pending_blocker || (report.device_free < report.requested &&
                            report.device_free + releasable_after_sync >= report.requested)) {
        report.verdict = oom_verdict::pending_cross_stream_frees;
        report.explanation =
            "The " + asked +
            " request would have fit if blocks already freed had not still "
            "been in use by other streams (" +
            format_bytes(report.totals.pending_free) +
            " pending). Synchronize the streams that use them, or call record_stream less.";
    } else if (report.device_free + report.totals.free >= report.requested) {
        report.verdict = oom_verdict::fragmentation;
        report.explanation =
            "Enough memory was free (" + format_bytes(report.device_free) + " on the device, " +
            format_bytes(report.totals.free) + " cached in segments) but no free range of " +
            asked + " existed in this pool and stream: the cached memory is cut into pieces (" +
            std::to_string(report.totals.free_blocks) + " free blocks, the largest " +
            format_bytes(report.totals.largest_free) +
            "). expandable_segments:True or max_split_size_mb can help.";
    } else {
        report.verdict = oom_verdict::capacity;
        report.explanation = "Live allocations hold " + format_bytes(report.totals.allocated) +
                             " of " + format_bytes(report.totals.reserved) +
                             " reserved, the device had " + format_bytes(report.device_free) +
                             " free and the segments " + format_bytes(report.totals.free) +
                             ": the memory is really in use. Reduce what is "
                             "live at this point (batch size, activations, cached tensors).";
    }
    return report;
}

}  // namespace memtrail::analysis
