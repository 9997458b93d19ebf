#pragma once
// One device's recording settings and trace.

#include <atomic>
#include <mutex>

#include "detail/trace_ring.hpp"
#include "memtrail/recorder/recorder.hpp"

namespace memtrail::recorder {

struct recorder::device_history {
    // Read on every call without a lock; written under options_mutex.
    std::atomic<record_mode> enabled{record_mode::off};
    std::atomic<context_mode> context{context_mode::none};
    std::atomic<stack_source> stacks{stack_source::native};
    std::atomic<unwinder> stack_unwinder{unwinder::libunwind};
    std::atomic<size_t> max_stack_depth{0};
    // Bit n: entries of allocator_action n keep the call's stack (from `context`).
    std::atomic<uint32_t> actions_keeping_stack{0};

    mutable std::mutex options_mutex;
    history_options options;
    detail::trace_ring ring;
};

}  // namespace memtrail::recorder
