#pragma once
// One replay of a trace through memtrail's allocator on the simulated device, with each ambiguous
// step read one way (trace_plan.hpp): one method per kind of step.

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "memtrail/core/caching_allocator.hpp"
#include "memtrail/core/simulated_device.hpp"
#include "memtrail/replay/replay.hpp"
#include "pool_tracker.hpp"
#include "trace_plan.hpp"

namespace memtrail::replay::detail {

// What every replay of one trace shares.
struct replay_inputs {
    const std::vector<snapshot::trace_entry>& entries;
    const trace_plan& plan;
    const replay_options& options;
    uint64_t device_total;
    const final_pool_map& final_pools;
};

// empty_cache calls a trace cannot show (they freed nothing), made after one of its steps.
struct unseen_syncs {
    static constexpr size_t at_start = SIZE_MAX;
    int count = 0;
    size_t after_step = at_start;
};

// How the ambiguous steps are read: `flipped[i]` 1 takes step i's second reading (an empty_cache
// as a private pool emptying itself, or the other reading of a release_run or
// complete_before_release), and the unseen empty_cache calls.
struct step_readings {
    const std::vector<uint8_t>& flipped;
    const unseen_syncs& unseen;
};

// The actions a replay reproduces, in the order the comparison checks them.
bool compared_action(snapshot::action a);

// Replays the trace with the given readings. With `expected` (the indices of the compared
// entries) given, it stops at the first entry that differs from the original and reports that
// entry's index in the original trace through `mismatch` (entries.size() when none differs).
replay_result run_once(const replay_inputs& inputs, const step_readings& readings,
                       const std::vector<size_t>* expected, size_t& mismatch);

// Collects the allocator's events as the replay's own trace.
class trace_collector : public allocator_observer {
  public:
    explicit trace_collector(int device) : device_(device) {}
    void on_event(const allocator_event& e) override;
    std::vector<snapshot::trace_entry> entries;

  private:
    int device_;
};

class replayer {
  public:
    replayer(const replay_inputs& inputs, const step_readings& readings);
    ~replayer() { allocator_.set_observer(nullptr); }
    replayer(const replayer&) = delete;
    replayer& operator=(const replayer&) = delete;

    // Runs every step; false when it stopped at a difference from `expected`.
    bool run(const std::vector<size_t>* expected, size_t& mismatch);
    // The result so far; after a full run, with the final state and counters.
    replay_result finish();
    replay_result& result() { return result_; }

  private:
    // Plays entry i; false when the replay should stop (an OOM under stop_at_oom).
    bool play(size_t i);
    bool allocate(size_t i);
    void free(size_t i);
    void complete_before_release(size_t i);
    void complete_deferred(const snapshot::trace_entry& e);
    void empty_cache(size_t i);
    void release_run(size_t i);
    void make_unseen_syncs();
    // Checks the entries produced since the last call against the original's; false at the
    // first difference, with its index in `mismatch`.
    bool matches_so_far(const std::vector<size_t>& expected, size_t& mismatch);
    void track_peaks();
    uint64_t external_usage_at(size_t i) const;

    const replay_inputs& in_;
    const step_readings& readings_;
    simulated_device device_;
    device_allocator allocator_;
    trace_collector collector_;
    pool_tracker pools_;
    replay_result result_;
    // Trace address -> replayed address of live allocations (they differ in what-if runs).
    std::unordered_map<uint64_t, device_address> live_;
    std::unordered_map<uint64_t, stream_handle> deferred_;  // trace address -> its wait stream
    uint64_t peak_allocated_ = 0;
    uint64_t peak_reserved_ = 0;
    size_t produced_ = 0;
    size_t compared_so_far_ = 0;
};

}  // namespace memtrail::replay::detail
