#pragma once
// zstd framing of whole snapshot files.

#include <cstdint>
#include <span>
#include <vector>

namespace memtrail::snapshot::detail {

bool has_zstd_magic(std::span<const uint8_t> bytes);

std::vector<uint8_t> zstd_compress(std::span<const uint8_t> bytes, int level);

// Decompresses every frame in `bytes`. A file may claim any size, so the output is grown as the
// data really decompresses and refused past `limit` bytes. Throws format_error.
std::vector<uint8_t> zstd_decompress(std::span<const uint8_t> bytes, size_t limit);

}  // namespace memtrail::snapshot::detail
