#pragma once
// Whole-file reads and atomic writes shared by the pickle and msgpack formats.

#include <cstdint>
#include <filesystem>
#include <span>
#include <vector>

namespace memtrail::snapshot::detail {

// Throws std::system_error naming the path.
std::vector<uint8_t> read_whole_file(const std::filesystem::path& path);

// Writes to a temporary file in the same folder, fsyncs it and renames it over `path`, so a reader
// sees the old file or the complete new one, never a part. Temporary files of `path` left by
// writers that no longer run (killed mid-write) are removed first. Throws std::system_error.
void write_file_atomically(const std::filesystem::path& path, std::span<const uint8_t> bytes);

}  // namespace memtrail::snapshot::detail
