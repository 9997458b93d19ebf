#pragma once
// What the recorder passes to the allocator as a context_handle: the stack id and time of a call,
// captured before the allocator's lock is taken. The allocator keeps it with the blocks and
// segments the call creates, so a later snapshot knows where and when each was made.
//
//   bits 63..24: microseconds since the recorder started, plus one (never 0, so that even a call
//                without a stack has a non-zero handle: the allocator substitutes a block's
//                allocation context for a zero handle on free)
//   bits 23..0:  stack id (stack_table::max_id)

#include <cstdint>

#include "memtrail/core/caching_allocator.hpp"
#include "memtrail/stacks/stack_table.hpp"

namespace memtrail::recorder::detail {

inline constexpr int call_context_stack_bits = 24;
inline constexpr uint64_t call_context_max_time_us = (uint64_t{1} << 40) - 2;  // 12.7 days

struct call_context {
    stack_id stack = no_stack;
    int64_t time_ns = 0;  // Unix time, to the microsecond; 0 when unknown (or past the 12.7 days)
};

inline context_handle encode_call_context(stack_id stack, int64_t time_ns, int64_t epoch_ns) {
    const int64_t elapsed_us = time_ns > epoch_ns ? (time_ns - epoch_ns) / 1000 : 0;
    const uint64_t capped = static_cast<uint64_t>(elapsed_us) < call_context_max_time_us
                                ? static_cast<uint64_t>(elapsed_us)
                                : call_context_max_time_us;
    return ((capped + 1) << call_context_stack_bits) | stack;
}

inline call_context decode_call_context(context_handle handle, int64_t epoch_ns) {
    if (handle == 0) {
        return {};
    }
    const uint64_t time_field = handle >> call_context_stack_bits;
    const int64_t time_ns = time_field - 1 < call_context_max_time_us
                                ? epoch_ns + static_cast<int64_t>(time_field - 1) * 1000
                                : 0;
    return {static_cast<stack_id>(handle & stack_table::max_id), time_ns};
}

}  // namespace memtrail::recorder::detail
