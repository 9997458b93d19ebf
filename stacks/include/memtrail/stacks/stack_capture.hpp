#pragma once
// Native stack capture: the return addresses of the calling thread, innermost first. Three
// unwinders: libunwind (reads .eh_frame, so it works for any code); eh_frame (the recorder's
// default), the same stacks from the same tables read once and kept by return address, far
// cheaper, falling back on libunwind for frames its rules cannot describe (signal frames, DWARF
// expressions); and a frame-pointer walk (cheapest, but only complete for code built with
// -fno-omit-frame-pointer).

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

namespace memtrail::recorder {

enum class unwinder : uint8_t { libunwind, frame_pointer, eh_frame };

// "libunwind", "frame_pointer" or "eh_frame".
std::string_view unwinder_name(unwinder method);
// Inverse of unwinder_name; false when `name` is none of them.
bool parse_unwinder(std::string_view name, unwinder& out);

// The deepest stack capture_stack returns.
inline constexpr size_t max_stack_depth = 256;

// Makes `method` ready: loads libunwind on first use (eh_frame's fallback too) and captures one
// stack so that its caches are warm before the first recorded allocation. Throws std::runtime_error
// when libunwind cannot be loaded. Thread-safe.
void prepare_stack_capture(unwinder method);

// Writes up to out.size() return addresses of the calling thread, innermost first: the first lies
// in the function that called capture_stack, after leaving out `skip` frames of that caller and
// its callers. Returns how many were written. prepare_stack_capture(method) must have run.
size_t capture_stack(unwinder method, std::span<uintptr_t> out, size_t skip = 0);

}  // namespace memtrail::recorder
