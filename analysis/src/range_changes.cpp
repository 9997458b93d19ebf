#include "memtrail/analysis/range_changes.hpp"

#include <algorithm>

namespace memtrail::analysis {

range_changes changes_over(const device_model& model, size_t first, size_t last) {
    last = std::min(last, model.event_count());
    first = std::min(first, model.event_count());
    if (first > last) {
        std::swap(first, last);
    }
    range_changes out;
    out.first = first;
    out.last = last;
    out.at_end = model.state_after(last);

    // A block live at `last` belongs to the latest allocation at its address made at or before
    // `last`; that one is inside the range exactly when any allocation at the address is.
    std::unordered_set<uint64_t> allocated_inside;
    for (const allocation_lifetime& life : model.lifetimes()) {
        if (life.begin > first && life.begin <= last) {
            allocated_inside.insert(life.address);
        }
    }
    for (const snapshot::segment& seg : out.at_end.segments) {
        for (const snapshot::block& b : seg.blocks) {
            if (b.state != snapshot::block_state::inactive && allocated_inside.count(b.address)) {
                out.new_blocks.insert(b.address);
            }
        }
    }

    // Space held at `first` that is free at `last`: the start's held blocks intersected with
    // the end's free blocks, both sorted by address.
    const memory_state at_start = model.state_after(first);
    std::vector<std::pair<uint64_t, uint64_t>> held, free_at_end;
    std::unordered_set<uint64_t> start_segments;
    for (const snapshot::segment& seg : at_start.segments) {
        start_segments.insert(seg.address);
        for (const snapshot::block& b : seg.blocks) {
            if (b.state != snapshot::block_state::inactive) {
                held.emplace_back(b.address, b.address + b.size);
            }
        }
    }
    for (const snapshot::segment& seg : out.at_end.segments) {
        if (!start_segments.count(seg.address)) {
            out.new_segments.insert(seg.address);
        }
        for (const snapshot::block& b : seg.blocks) {
            if (b.state == snapshot::block_state::inactive) {
                free_at_end.emplace_back(b.address, b.address + b.size);
            }
        }
    }
    size_t h = 0;
    for (const auto& [free_begin, free_end] : free_at_end) {
        while (h < held.size() && held[h].second <= free_begin) {
            ++h;
        }
        for (size_t k = h; k < held.size() && held[k].first < free_end; ++k) {
            const uint64_t begin = std::max(free_begin, held[k].first);
            const uint64_t end = std::min(free_end, held[k].second);
            if (!out.freed.empty() && out.freed.back().second == begin) {
                out.freed.back().second = end;
            } else {
                out.freed.emplace_back(begin, end);
            }
        }
    }
    return out;
}

}  // namespace memtrail::analysis
