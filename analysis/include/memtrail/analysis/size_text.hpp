#pragma once
// Byte sizes as the tools print and accept them: "1.5GiB", "512B", "20MiB".

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace memtrail::analysis {

// "0B", "512B", "1.5KiB", "20MiB", "1.25GiB": the largest binary unit that keeps the number at
// least 1, at most two decimals, trailing zeros dropped.
std::string format_bytes(uint64_t bytes);
// Signed, for differences: "+1.5GiB", "-20MiB", "0B".
std::string format_bytes_delta(int64_t bytes);

// Parses a plain byte count ("1048576") or a number with a unit, case-insensitive, with or
// without a space: B; KiB, MiB, GiB, TiB (powers of 1024); KB, MB, GB, TB (powers of 1000).
// Fractions are allowed ("1.5GiB") and rounded down to whole bytes. nullopt when malformed,
// negative or too large.
std::optional<uint64_t> parse_bytes(std::string_view text);

}  // namespace memtrail::analysis
