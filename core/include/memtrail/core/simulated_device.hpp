#pragma once
// A device with no GPU behind it. It hands out addresses deterministically (or exactly the ones
// it is told to), never touches the memory, so a 141 GB device can be simulated on a laptop;
// events complete at once or when a test says so; it can fail on purpose and counts every call.

#include <atomic>
#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "memtrail/core/device.hpp"

namespace memtrail {

struct simulated_device_options {
    int index = 0;
    std::string name = "memtrail simulated device";
    uint64_t capacity = 80ull << 30;                  // bytes of "physical" memory
    uint64_t granularity = 2ull << 20;                // page granularity of the VMM calls
    device_address base_address = 0x7f0000000000ull;  // first address handed out
    bool events_complete_immediately = true;
};

// How often each device call was made.
struct simulated_device_calls {
    uint64_t allocate = 0, free = 0, memory_info = 0;
    uint64_t create_event = 0, destroy_event = 0, record_event = 0, query_event = 0;
    uint64_t synchronize_event = 0, synchronize_stream = 0, synchronize_device = 0;
    uint64_t reserve = 0, release_range = 0, create_physical = 0, release_physical = 0;
    uint64_t map = 0, unmap = 0, set_access = 0;
    uint64_t failed_allocations = 0;
};

class simulated_device final : public device {
  public:
    explicit simulated_device(simulated_device_options options = {});

    int index() const override { return options_.index; }
    std::string name() const override { return options_.name; }

    device_status allocate(uint64_t size, device_address& out) override;
    void free(device_address address) override;
    memory_info get_memory_info() override;

    event_handle create_event() override;
    void destroy_event(event_handle event) override;
    void record_event(event_handle event, stream_handle stream) override;
    bool query_event(event_handle event) override;
    void synchronize_event(event_handle event) override;
    void synchronize_stream(stream_handle stream) override;
    void synchronize_device() override;
    uint64_t stream_capture_id(stream_handle stream) override;

    uint64_t allocation_granularity() override { return options_.granularity; }
    device_status reserve_address_range(uint64_t size, device_address& out) override;
    void release_address_range(device_address address, uint64_t size) override;
    device_status create_physical(uint64_t size, physical_handle& out) override;
    void release_physical(physical_handle handle) override;
    void map(device_address address, uint64_t size, physical_handle handle) override;
    void unmap(device_address address, uint64_t size) override;
    void set_access(device_address address, uint64_t size) override;

    // --- address control --------------------------------------------------------------------
    // The next allocate() / reserve_address_range() calls return these addresses, in order,
    // instead of the deterministic ones (replay uses this to reproduce a trace's addresses).
    // One that would overlap a range already handed out is skipped.
    void queue_addresses(const std::vector<device_address>& addresses);
    size_t queued_address_count() const;

    // --- events -----------------------------------------------------------------------------
    void set_events_complete_immediately(bool immediately);
    // Completes one recorded event, or every event recorded on a stream, or all of them.
    void complete_event(event_handle event);
    void complete_stream(stream_handle stream);
    void complete_all_events();
    // Events recorded and not yet completed, oldest first.
    std::vector<event_handle> pending_events() const;
    // The stream an event was last recorded on.
    stream_handle event_stream(event_handle event) const;

    // --- stream capture (CUDA graphs) ---------------------------------------------------------
    // Starts a capture on `stream` and returns its id. While any capture is under way, the calls
    // that would invalidate a real one (event queries, synchronizations, frees and unmaps) throw
    // device_error, so that tests catch an allocator that makes them.
    uint64_t begin_capture(stream_handle stream);
    void end_capture(stream_handle stream);

    // --- fault injection --------------------------------------------------------------------
    // The n-th allocate()/create_physical() from now (1 = the next one) reports out of memory.
    void fail_nth_allocation(uint64_t n);
    // Every allocate()/create_physical() reports out of memory with probability p.
    void set_failure_probability(double p, uint64_t seed = 1);
    void clear_faults();

    void set_capacity(uint64_t capacity);
    // Memory held on the device by others (other processes, libraries, the CUDA context): it
    // leaves the total unchanged and the free memory smaller.
    void set_external_usage(uint64_t bytes);

    // --- observation ------------------------------------------------------------------------
    simulated_device_calls calls() const;
    uint64_t used_bytes() const;  // plain allocations plus created physical memory
    size_t live_allocation_count() const;

  private:
    bool should_fail_locked();
    device_address next_address_locked(uint64_t size);
    bool range_free_locked(device_address start, uint64_t size) const;
    void refuse_during_capture_locked(const char* call) const;

    simulated_device_options options_;
    mutable std::mutex mutex_;
    simulated_device_calls calls_;
    uint64_t used_ = 0;
    uint64_t external_ = 0;
    device_address next_address_;
    std::deque<device_address> queued_addresses_;
    std::unordered_map<device_address, uint64_t> allocations_;  // plain allocations
    std::map<device_address, uint64_t> reservations_;           // reserved VA ranges
    std::map<device_address, device_address> occupied_;       // start -> end, all ranges handed out
    std::unordered_map<physical_handle, uint64_t> physical_;  // physical handle -> size
    std::map<device_address, std::pair<uint64_t, physical_handle>> mappings_;
    physical_handle next_physical_ = 1;
    struct event_state {
        stream_handle stream = 0;
        bool recorded = false;
        bool completed = true;
        uint64_t record_order = 0;
    };
    std::unordered_map<event_handle, event_state> events_;
    event_handle next_event_ = 1;
    uint64_t record_counter_ = 0;
    std::map<stream_handle, uint64_t> captures_;  // capturing stream -> capture id
    std::atomic<size_t> capture_count_{0};        // captures_.size(), read without the lock
    uint64_t next_capture_ = 1;
    uint64_t fail_countdown_ = 0;  // 0 = off
    double failure_probability_ = 0.0;
    std::mt19937_64 rng_;
};

}  // namespace memtrail
