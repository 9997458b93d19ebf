#pragma once
// What record_memory_history records, in PyTorch's terms
// (torch.cuda.memory._record_memory_history(enabled, context, stacks, max_entries)).

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "memtrail/stacks/interned_capture.hpp"

namespace memtrail::recorder {

// PyTorch's `enabled`: nothing; only the state of live blocks (with their stacks); or also the
// trace of every allocator event.
enum class record_mode : uint8_t { off, state, all };

// PyTorch's `context`: which stacks are captured. none; state: live blocks only; alloc: also
// allocation events in the trace; all: also frees.
enum class context_mode : uint8_t { none, state, alloc, all };

// PyTorch's `stacks`: stack_source (interned_capture.hpp).

// The default history length per device (MEMTRAIL_MAX_ENTRIES overrides it in librecorder).
inline constexpr size_t default_max_entries = 1'000'000;

struct history_options {
    record_mode enabled = record_mode::all;
    context_mode context = context_mode::all;
    stack_source stacks = stack_source::native;
    size_t max_entries = default_max_entries;  // trace entries kept per device; older ones drop
    // libunwind's stacks, from .eh_frame rules kept by return address (libunwind walks the rest).
    unwinder stack_unwinder = unwinder::eh_frame;
    size_t max_stack_depth = 64;  // at most memtrail::recorder::max_stack_depth
    bool clear_history = false;   // forget the trace recorded so far
};

// Names as PyTorch spells them: "off" (PyTorch's None), "state", "all"; "none" (None), "state",
// "alloc", "all"; "native", "python", "all". parse_* return false for any other name.
std::string_view record_mode_name(record_mode mode);
bool parse_record_mode(std::string_view name, record_mode& out);
std::string_view context_mode_name(context_mode mode);
bool parse_context_mode(std::string_view name, context_mode& out);
std::string_view stack_source_name(stack_source source);
bool parse_stack_source(std::string_view name, stack_source& out);

}  // namespace memtrail::recorder
