#pragma once
// One device's recording settings and trace.

#include <atomic>
#include <cstdint>
#include <limits>
#include <mutex>

#include "detail/trace_ring.hpp"
#include "memtrail/recorder/recorder.hpp"

namespace memtrail::recorder {

struct recorder::device_history {
    // Read on every call without a lock; written under options_mutex.
    std::atomic<record_mode> enabled{record_mode::off};
    std::atomic<context_mode> context{context_mode::none};
    std::atomic<stack_source> stacks{stack_source::native};
    std::atomic<unwinder> stack_unwinder{unwinder::eh_frame};
    std::atomic<size_t> max_stack_depth{0};
    // Bit n: entries of allocator_action n keep the call's stack (from `context`).
    std::atomic<uint32_t> actions_keeping_stack{0};

    mutable std::mutex options_mutex;
    history_options options;
    detail::trace_ring ring;
};

namespace detail {

// The trace ring's end when the allocator last recorded a "snapshot" event on this thread. The
// allocator's snapshot() copies its segments and records that event under the device's lock,
// which every allocator event holds too: the trace up to this cut is exactly the history of the
// segments copied. take_snapshot() reads it right after the call, on the same thread.
inline constexpr uint64_t no_snapshot_cut = std::numeric_limits<uint64_t>::max();
inline thread_local uint64_t snapshot_cut_on_this_thread = no_snapshot_cut;

}  // namespace detail

}  // namespace memtrail::recorder
