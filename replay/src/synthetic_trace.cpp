#include "memtrail/replay/synthetic_trace.hpp"

#include <cmath>
#include <random>

#include "memtrail/bridge/allocator_snapshot.hpp"
#include "memtrail/core/caching_allocator.hpp"
#include "memtrail/core/simulated_device.hpp"
#include "memtrail/replay/replay.hpp"

namespace memtrail::replay {

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

}  // namespace memtrail::replay
