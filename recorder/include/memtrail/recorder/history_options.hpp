#pragma once
// What record_memory_history records, in PyTorch's terms
// (torch.cuda.memory._record_memory_history(enabled, context, stacks, max_entries)).

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "memtrail/recorder/stack_capture.hpp"

namespace memtrail::recorder {

// PyTorch's `enabled`: nothing; only the state of live blocks (with their stacks); or also the
// trace of every allocator event.
enum class record_mode : uint8_t { off, state, all };

// PyTorch's `context`: which stacks are captured. none; state: live blocks only; alloc: also
// allocation events in the trace; all: also frees.
enum class context_mode : uint8_t { none, state, alloc, all };

// PyTorch's `stacks`: where stacks come from. native: return addresses; python: the Python
// frames of a thread that holds the GIL; all: both, the Python frames in place of the
// interpreter's own native frames.
enum class stack_source : uint8_t { native, python, all };

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

// How Python frames are read, for every recorder of the process (MEMTRAIL_PYTHON_FRAMES).
enum class python_frames_source : uint8_t {
    direct,  // without the GIL where the version allows (the default)
    api,     // the public API under the GIL, always
    verify,  // both, for tests: a difference stops the process with both stacks on stderr
};
// "direct", "api" or "verify"; false for any other name.
bool parse_python_frames_source(std::string_view name, python_frames_source& out);
// Chooses how Python frames are read. Takes effect when the first Python stack is captured;
// later calls change nothing.
void choose_python_frames_source(python_frames_source source);

}  // namespace memtrail::recorder
