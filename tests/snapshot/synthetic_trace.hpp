#pragma once
// A synthetic trace shaped like a training job's: allocations of realistic sizes (512 B
// rounding, log-spread from 512 B to 256 MiB) carved out of a few large segments, freed a while
// later (free_requested, then free_completed), on 2 streams, from 5000 distinct stacks, with
// nanosecond timestamps a few microseconds apart. Deterministic for a given seed. Used by the
// bytes-per-event test and the format benchmark.

#include <cstdint>
#include <deque>
#include <random>
#include <string>

#include "memtrail/snapshot/model.hpp"

namespace memtrail::snapshot::test {

inline snapshot make_synthetic_trace(size_t events, uint64_t seed = 42) {
    snapshot s;
    s.info.producer = "synthetic";
    std::mt19937_64 rng(seed);
    const auto uniform = [&](uint64_t n) { return rng() % n; };

    // 5000 stacks of 8 to 24 frames drawn from 20000 frames.
    std::vector<frame_id> frame_pool;
    for (int i = 0; i < 20000; ++i) {
        frame f;
        f.kind = i % 3 == 0 ? frame_kind::python : frame_kind::native;
        f.function = s.intern_string("function_" + std::to_string(i));
        f.filename = s.intern_string("file_" + std::to_string(i % 700) + ".cpp");
        f.line = static_cast<uint32_t>(1 + uniform(3000));
        frame_pool.push_back(s.intern_frame(f));
    }
    std::vector<stack_id> stacks;
    while (stacks.size() < 5000) {
        std::vector<frame_id> frames(8 + uniform(17));
        for (auto& f : frames) {
            f = frame_pool[uniform(frame_pool.size())];
        }
        const stack_id id = s.intern_stack(frames);
        if (id == stacks.size() + 1) {
            stacks.push_back(id);
        }
    }
    const string_id na = s.intern_string("N/A");
    const uint64_t streams[2] = {0, 0x55d0c2a8e0f0ull};

    auto& trace = s.trace_for(0);
    trace.entries.reserve(events);
    struct live {
        uint64_t address, size, stream;
        stack_id stack;
    };
    std::deque<live> alive;
    uint64_t heap_top = 0x7f3a00000000ull;
    std::vector<uint64_t> free_addresses;
    int64_t time = 1795211106018632000;
    const auto push = [&](action kind, uint64_t address, uint64_t size, uint64_t stream,
                          stack_id stack) {
        trace_entry e;
        e.kind = kind;
        e.address = address;
        e.size = size;
        e.requested_size = kind == action::alloc || kind == action::free_requested ||
                                   kind == action::free_completed
                               ? size
                               : 0;
        e.stream = stream;
        e.thread = 1;
        time += static_cast<int64_t>(500 + uniform(20000));
        e.time_ns = time;
        e.stack = stack;
        e.compile_context = na;
        trace.entries.push_back(e);
    };
    while (trace.entries.size() < events) {
        const bool allocate = alive.size() < 64 || (alive.size() < 4096 && uniform(2) == 0);
        if (allocate) {
            // log-spread sizes, rounded up to 512 bytes
            const int shift = 9 + static_cast<int>(uniform(19));
            const uint64_t size =
                ((uint64_t{1} << shift) + uniform(uint64_t{1} << shift) + 511) & ~uint64_t{511};
            uint64_t address;
            if (!free_addresses.empty() && uniform(4) != 0) {
                const size_t i = uniform(free_addresses.size());
                address = free_addresses[i];
                free_addresses[i] = free_addresses.back();
                free_addresses.pop_back();
            } else {
                if (uniform(64) == 0) {
                    push(action::segment_alloc, heap_top, 2ull << 30, streams[uniform(2)],
                         stacks[uniform(stacks.size())]);
                }
                address = heap_top;
                heap_top += (size + 0xfffff) & ~uint64_t{0xfffff};
            }
            const live a{address, size, streams[uniform(2)], stacks[uniform(stacks.size())]};
            push(action::alloc, a.address, a.size, a.stream, a.stack);
            alive.push_back(a);
        } else {
            const size_t i = uniform(alive.size());
            const live a = alive[i];
            alive[i] = alive.back();
            alive.pop_back();
            push(action::free_requested, a.address, a.size, a.stream, a.stack);
            push(action::free_completed, a.address, a.size, a.stream, a.stack);
            free_addresses.push_back(a.address);
        }
    }
    trace.entries.resize(events);
    return s;
}

}  // namespace memtrail::snapshot::test
