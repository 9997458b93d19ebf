#pragma once
// The recorder's call into stacks/: the calling thread's stack (native frames, Python frames or
// both) interned in a stack_table, before any memtrail lock is taken. The eh_frame walk remembers
// the ids its stacks were interned as, so a capture that repeats its thread's last walk takes the
// id without hashing the stack again.

#include <cstddef>
#include <cstdint>

#include "memtrail/stacks/stack_capture.hpp"
#include "memtrail/stacks/stack_table.hpp"

namespace memtrail::recorder {

// PyTorch's `stacks`: where stacks come from. native: return addresses; python: the Python
// frames of a thread that holds the GIL; all: both, the Python frames in place of the
// interpreter's own native frames.
enum class stack_source : uint8_t { native, python, all };

// What capture_stack captures.
struct capture_options {
    stack_source source = stack_source::native;
    unwinder method = unwinder::eh_frame;
    size_t depth = 64;  // native frames at most, and Python frames at most; up to max_stack_depth
};

// Captures the calling thread's stack as `options` ask, leaving out `skip` frames of the caller
// and its callers (the first native frame lies in the function that called capture_stack), and
// interns it in `table`. no_stack when the table is full or the stack is empty.
// prepare_stack_capture(options.method) must have run for native frames. May wait for the GIL
// (Python frames): call it before taking any lock.
stack_id capture_stack(stack_table& table, const capture_options& options, size_t skip);

}  // namespace memtrail::recorder
