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

// What a zstd file can honestly describe, per compressed byte: real snapshots expand 2 to 6
// times. Past 64 times (plus a slack that keeps small files of any shape readable) the file is a
// decompression bomb. docs/snapshot-format.md states the same numbers.
inline constexpr size_t zstd_expansion_limit = 64;
inline constexpr size_t zstd_expansion_slack = size_t{1} << 20;

// zstd_decompress within those bounds, for memtrail snapshots and PyTorch pickles alike.
inline std::vector<uint8_t> zstd_decompress_bounded(std::span<const uint8_t> bytes) {
    return zstd_decompress(bytes, zstd_expansion_limit * bytes.size() + zstd_expansion_slack);
}

// The first `count` bytes `bytes` decompress to (fewer when it holds fewer, or is damaged before
// them): enough to tell what a compressed file holds without decompressing it. Never throws for
// the data.
std::vector<uint8_t> zstd_decompress_start(std::span<const uint8_t> bytes, size_t count);

}  // namespace memtrail::snapshot::detail
