#pragma once
// The code objects that recorded stacks name: each one referenced once (Py_IncRef, under the GIL)
// and never released, so that it lives until the dump and its address is never reused by another
// code object. Asking whether a code object is kept needs no GIL and no lock, so a capture whose
// code objects are all kept already never takes the GIL.

#include <cstdint>
#include <span>

namespace memtrail::recorder::detail {

// True when `code` is kept. Any thread, any time.
bool is_kept_python_code(uintptr_t code);

// True when every code object of `pairs` ((code, location) pairs, as captured) is kept.
bool all_python_code_kept(std::span<const uintptr_t> pairs);

// Adds `code`, which the caller has just referenced under the GIL. Kept ones are never added twice:
// the caller checks under the GIL, which every caller of this holds.
void add_kept_python_code(uintptr_t code);

}  // namespace memtrail::recorder::detail
