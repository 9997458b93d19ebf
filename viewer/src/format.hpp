#pragma once
// Numbers as the views print them: bytes as every memtrail tool prints them, event counts,
// times, addresses.

#include <cstdint>
#include <string>

#include "memtrail/analysis/size_text.hpp"

namespace memtrail::viewer {

using analysis::format_bytes;
using analysis::format_bytes_delta;
// "1,234,567".
std::string format_count(uint64_t count);
// A duration: "850 ns", "12.5 us", "3.20 ms", "1.75 s", "2 min 05 s".
std::string format_duration(int64_t ns);
// A 64-bit address as "0x7f5c00000000".
std::string format_address(uint64_t address);
// A grid step near `raw`: 1, 2 or 5 times a power of `base` units (1024 for bytes, 10 else).
double nice_step(double raw, double base);

}  // namespace memtrail::viewer
