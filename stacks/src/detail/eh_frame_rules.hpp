#pragma once
// How to step out of one x86-64 frame, read from the .eh_frame of the module that holds it: the
// canonical frame address (CFA, the caller's stack pointer) is rsp or rbp plus an offset, the
// return address sits at CFA - 8 and rbp is either unchanged or saved at CFA + an offset. That is
// all compilers emit for ordinary code; anything else (signal frames, DWARF expressions, a CFA
// in another register) is left to libunwind.

#include <cstdint>
#include <optional>

namespace memtrail::recorder::detail {

struct frame_rule {
    bool cfa_from_rbp = false;  // else from rsp
    bool outermost = false;     // the return address is undefined: the stack ends here
    bool rbp_saved = false;     // else rbp is unchanged in the caller
    int32_t cfa_offset = 0;     // CFA = register + cfa_offset
    int32_t rbp_offset = 0;     // saved rbp at CFA + rbp_offset
};

// The rule for the frame whose code is at `pc` (for a return address, pass it minus one so the
// call instruction, not the next one, is looked up). Empty when no module holds `pc`, its module
// has no .eh_frame_hdr search table, or its rule is one the walk leaves to libunwind.
// Thread-safe; it reads the loaded modules' memory and never allocates.
std::optional<frame_rule> find_frame_rule(uintptr_t pc);

}  // namespace memtrail::recorder::detail
