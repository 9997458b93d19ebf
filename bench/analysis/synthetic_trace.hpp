#pragma once
// A synthetic trace of any length that the analysis must reconstruct without a single
// anomaly: small-pool segments used as stacks (blocks are taken at the top of the free range and
// freed last-in first-out), so every block's size follows the allocator's rules.

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "memtrail/snapshot/model.hpp"

namespace memtrail::bench {

inline snapshot::snapshot synthetic_snapshot(size_t entry_count, uint32_t seed = 1) {
    using snapshot::action;
    constexpr uint64_t segment_size = 2ull << 20;
    constexpr size_t segment_count = 256;
    snapshot::snapshot snap;
    snap.info.producer = "memtrail synthetic benchmark";
    std::vector<snapshot::stack_id> stacks;
    for (int s = 0; s < 64; ++s) {
        std::vector<snapshot::frame_id> frames;
        for (int depth = 0; depth < 12; ++depth) {
            snapshot::frame f;
            f.function = snap.intern_string("function_" + std::to_string((s * 7 + depth) % 97));
            f.filename = snap.intern_string("model/layer_" + std::to_string(depth) + ".py");
            f.line = static_cast<uint32_t>(10 + s + depth);
            f.kind = snapshot::frame_kind::python;
            frames.push_back(snap.intern_frame(f));
        }
        stacks.push_back(snap.intern_stack(frames));
    }
    struct stacked_segment {
        uint64_t base = 0;
        struct held {
            uint64_t address;
            uint64_t request;
            snapshot::stack_id stack;
        };
        std::vector<held> blocks;  // bottom first
        uint64_t top = 0;          // first free byte
    };
    std::vector<stacked_segment> segments(segment_count);
    auto& entries = snap.trace_for(0).entries;
    entries.reserve(entry_count + segment_count);
    std::mt19937_64 random(seed);
    int64_t time_ns = 1'700'000'000'000'000'000;
    auto emit = [&](action kind, uint64_t address, uint64_t size, snapshot::stack_id stack) {
        snapshot::trace_entry e;
        e.kind = kind;
        e.address = address;
        e.size = size;
        e.requested_size = kind == action::segment_alloc ? 0 : size;
        e.stream = 7;
        e.stack = stack;
        time_ns += 1000;
        e.time_ns = time_ns;
        entries.push_back(e);
    };
    for (size_t i = 0; i < segment_count; ++i) {
        segments[i].base = segments[i].top = 0x7f0000000000ull + i * (4ull << 20);
        emit(action::segment_alloc, segments[i].base, segment_size, stacks[i % stacks.size()]);
    }
    while (entries.size() < entry_count) {
        stacked_segment& seg = segments[random() % segment_count];
        const uint64_t request = 1 + random() % (48ull << 10);
        const uint64_t rounded = (request + 511) / 512 * 512;
        const bool fits = seg.top + rounded <= seg.base + segment_size;
        if (fits && (seg.blocks.empty() || random() % 2 == 0)) {
            const snapshot::stack_id stack = stacks[random() % stacks.size()];
            emit(action::alloc, seg.top, request, stack);
            seg.blocks.push_back({seg.top, request, stack});
            // The last piece of a segment is taken whole when less than a block would remain.
            seg.top = seg.base + segment_size - (seg.top + rounded) < 512 ? seg.base + segment_size
                                                                          : seg.top + rounded;
        } else if (!seg.blocks.empty()) {
            const auto freed = seg.blocks.back();
            seg.blocks.pop_back();
            emit(action::free_requested, freed.address, freed.request, freed.stack);
            emit(action::free_completed, freed.address, freed.request, freed.stack);
            seg.top = freed.address;
        }
    }
    // The final segments, as the snapshot's own state.
    for (const stacked_segment& seg : segments) {
        snapshot::segment out;
        out.address = seg.base;
        out.total_size = segment_size;
        out.stream = 7;
        out.is_large = false;
        for (size_t b = 0; b < seg.blocks.size(); ++b) {
            const auto& held = seg.blocks[b];
            const uint64_t end = b + 1 < seg.blocks.size() ? seg.blocks[b + 1].address : seg.top;
            out.blocks.push_back(snapshot::block{held.address, end - held.address, held.request,
                                                 snapshot::block_state::active_allocated,
                                                 held.stack});
            out.allocated_size += end - held.address;
            out.active_size += end - held.address;
            out.requested_size += held.request;
        }
        if (seg.top < seg.base + segment_size) {
            out.blocks.push_back(snapshot::block{seg.top, seg.base + segment_size - seg.top, 0,
                                                 snapshot::block_state::inactive});
        }
        snap.segments.push_back(out);
    }
    return snap;
}

}  // namespace memtrail::bench
