// The synthetic traces of synthetic_trace.hpp, one section each.
//
// Index of this file:
// [SECTION] Through the allocator (make_synthetic_history)
// [SECTION] Small-pool segments used as stacks (make_stacked_history)
// [SECTION] A training job's field values (make_format_trace)

#include "memtrail/replay/synthetic_trace.hpp"

#include <cmath>
#include <deque>
#include <random>
#include <string>
#include <vector>

#include "memtrail/bridge/allocator_snapshot.hpp"
#include "memtrail/core/caching_allocator.hpp"
#include "memtrail/core/simulated_device.hpp"
#include "memtrail/replay/replay.hpp"

namespace memtrail::replay {

//-------------------------------------------------------------------------------------------------
// [SECTION] Through the allocator (make_synthetic_history)
//-------------------------------------------------------------------------------------------------
namespace {

class history_recorder : public allocator_observer {
  public:
    void on_event(const allocator_event& e) override {
        snapshot::trace_entry& t = entries.emplace_back();
        t.kind = bridge::to_snapshot_action(e.action);
        t.address = e.address;
        t.size = e.size;
        t.stream = e.stream;
        t.time_ns = static_cast<int64_t>(entries.size()) * 1000;
    }
    std::vector<snapshot::trace_entry> entries;
};

}  // namespace

snapshot::snapshot make_synthetic_history(const synthetic_options& options) {
    simulated_device_options device_options;
    device_options.capacity = options.device_memory;
    simulated_device dev(device_options);
    dev.set_events_complete_immediately(false);
    device_allocator allocator(dev, allocator_config::parse(options.conf));
    history_recorder history;
    allocator.set_observer(&history);

    std::mt19937_64 rng(options.seed);
    std::uniform_real_distribution<double> exponent(0.0, 27.0);  // 1 B .. 128 MiB
    const stream_handle streams[] = {0, 0x51, 0x52};
    std::vector<device_address> live(options.live_slots, 0);
    for (uint64_t i = 0; i < options.operations; ++i) {
        device_address& slot = live[rng() % live.size()];
        if (slot) {
            if (options.cross_stream_frees && rng() % 10 == 0) {
                allocator.record_stream(slot, streams[1 + rng() % 2]);
            }
            allocator.free(slot);
            slot = 0;
        } else {
            try {
                slot = allocator.allocate(static_cast<uint64_t>(std::exp2(exponent(rng))) + 1,
                                          streams[rng() % 3]);
            } catch (const out_of_memory_error&) {
                slot = 0;
            }
        }
        if (rng() % 8 == 0) {
            dev.complete_stream(streams[1 + rng() % 2]);
        }
        if (options.empty_cache_calls && rng() % 5000 == 0) {
            allocator.empty_cache();
        }
    }
    allocator.set_observer(nullptr);

    snapshot::snapshot out;
    out.info.producer = "memtrail synthetic history";
    snapshot::device_properties props;
    props.total_memory = options.device_memory;
    out.info.devices.push_back(props);
    out.trace_for(0).entries = std::move(history.entries);
    for (const segment_info& s : allocator.snapshot(false)) {
        out.segments.push_back(bridge::to_snapshot_segment(s, 0));
    }
    out.stats[0] = allocator.memory_stats();
    return out;
}

//-------------------------------------------------------------------------------------------------
// [SECTION] Small-pool segments used as stacks (make_stacked_history)
//-------------------------------------------------------------------------------------------------

snapshot::snapshot make_stacked_history(size_t entry_count, uint64_t seed) {
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

//-------------------------------------------------------------------------------------------------
// [SECTION] A training job's field values (make_format_trace)
//-------------------------------------------------------------------------------------------------

snapshot::snapshot make_format_trace(size_t events, uint64_t seed) {
    using snapshot::action;
    using snapshot::frame_id;
    using snapshot::stack_id;
    snapshot::snapshot s;
    s.info.producer = "synthetic";
    std::mt19937_64 rng(seed);
    const auto uniform = [&](uint64_t n) { return rng() % n; };

    // 5000 stacks of 8 to 24 frames drawn from 20000 frames.
    std::vector<frame_id> frame_pool;
    for (int i = 0; i < 20000; ++i) {
        snapshot::frame f;
        f.kind = i % 3 == 0 ? snapshot::frame_kind::python : snapshot::frame_kind::native;
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
    const snapshot::string_id na = s.intern_string("N/A");
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
        snapshot::trace_entry e;
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

}  // namespace memtrail::replay
