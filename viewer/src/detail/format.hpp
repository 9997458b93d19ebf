#pragma once
// Numbers as the views print them: bytes as every memtrail tool prints them, event counts,
// times, addresses.

#include <cstddef>
#include <cstdint>
#include <string>

#include "memtrail/analysis/size_text.hpp"
#include "memtrail/snapshot/model.hpp"

namespace memtrail::viewer {

using analysis::format_bytes;
using analysis::format_bytes_delta;
// "1,234,567".
std::string format_count(uint64_t count);
// A position in a device's trace as the CLI names it (cli/src/common.cpp): "start" before the
// first entry, else "entry N", the state after trace entry N (position N + 1).
std::string position_label(size_t position);
// A duration: "850 ns", "12.5 us", "3.20 ms", "1.75 s", "2 min 05 s".
std::string format_duration(int64_t ns);
// A 64-bit address as "0x7f5c00000000".
std::string format_address(uint64_t address);
// What PyTorch tells of an entry's context: its compile context (torch.compile's frame id, when
// not "N/A") and the user metadata, as "compile 0/1, step 3"; "" when it tells nothing.
std::string format_entry_context(const snapshot::snapshot& source, const snapshot::trace_entry& e);
// A grid step near `raw`: 1, 2 or 5 times a power of `base` units (1024 for bytes, 10 else).
double nice_step(double raw, double base);

}  // namespace memtrail::viewer
