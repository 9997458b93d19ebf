#pragma once
// The walk of the eh_frame unwinder: each return address's rule (eh_frame_rules.hpp) is read
// once and kept in a table keyed by the address, so a capture costs a table probe and two loads
// per frame. What the rules cannot describe is left to libunwind by the caller.

#include <cstddef>
#include <cstdint>
#include <span>

namespace memtrail::recorder::detail {

// The registers the walk needs, in the frame of the first return address.
struct unwind_registers {
    uintptr_t pc = 0;  // a return address
    uintptr_t sp = 0;  // the stack pointer once that address was returned to (the callee's CFA)
    uintptr_t bp = 0;
};

struct stack_range {
    uintptr_t low = 0;
    uintptr_t high = 0;
};

// The calling thread's stack (both 0 when unknown); defined in stack_capture.cpp.
const stack_range& this_thread_stack();

// Writes up to out.size() return addresses from `start` outwards, after leaving out `skip`,
// into `out`, and sets `written`. False when a frame on the way has no rule this walk can follow
// or would read outside `stack`: the caller then asks libunwind for the whole stack.
bool walk_eh_frame(unwind_registers start, stack_range stack, size_t skip, std::span<uintptr_t> out,
                   size_t& written);

}  // namespace memtrail::recorder::detail
