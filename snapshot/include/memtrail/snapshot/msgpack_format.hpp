#pragma once
// memtrail's own snapshot file: "MEMTRAIL", a format version, then one msgpack map of sections
// (header, settings, stats, string/frame/stack tables, segments, column-wise traces,
// annotations), optionally inside a zstd frame. docs/snapshot-format.md specifies it.

#include <cstdint>
#include <filesystem>
#include <span>
#include <vector>

#include "memtrail/snapshot/model.hpp"

namespace memtrail::snapshot {

/// The version this library writes and the newest it reads.
inline constexpr uint32_t current_format_version = 1;

enum class compression : uint8_t {
    automatic,  // zstd when the path ends in ".zst"; none for in-memory writes
    none,
    zstd,
};

struct write_options {
    compression compress = compression::automatic;
    int zstd_level = 3;  // 1 (fast) .. 19 (small); 3 is zstd's own default
};

/// Encodes `s` in memory. The bytes depend only on the model (and the options), so equal models
/// give equal files.
std::vector<uint8_t> write_snapshot(const snapshot& s, const write_options& options = {});

/// Writes `s` to `path` as write_output_file does (output_file.hpp): atomically for a file,
/// through a symbolic link, directly to a device or FIFO.
/// @throws std::system_error when the file cannot be written.
void write_snapshot(const snapshot& s, const std::filesystem::path& path,
                    const write_options& options = {});

/// Decodes a snapshot file held in memory, plain or zstd-compressed (detected by zstd's magic).
/// @throws format_error naming what was expected and the byte offset (in the uncompressed data).
snapshot read_snapshot(std::span<const uint8_t> bytes);

/// Reads a snapshot file, plain or zstd-compressed (load_snapshot reads any format).
/// @throws format_error as above; std::system_error when the file cannot be read; load_error
///         (load.hpp) when it is not a regular file.
snapshot read_snapshot(const std::filesystem::path& path);

/// True when `bytes` start like a memtrail snapshot: "MEMTRAIL", or a zstd frame.
bool looks_like_snapshot(std::span<const uint8_t> bytes);

}  // namespace memtrail::snapshot
