#pragma once
// The one way memtrail writes what it is asked to write (snapshots, pickles, text exports,
// statistics, reports), by every tool, so every output path means the same:
// - a regular file, or a path where nothing is yet, is written to a temporary file in the same
//   folder, fsynced and renamed into place: a reader sees the old file or the whole new one, and
//   a full disk or a crash leaves the old one;
// - a symbolic link is written through: what it finally points to is replaced as above and the
//   link stays (`latest -> runs/7` still points to runs/7);
// - a character device or a FIFO (/dev/null, /dev/stdout, a named pipe) is written directly,
//   every write checked (/dev/full reports ENOSPC);
// - a directory, a block device or a socket is refused.

#include <cstdint>
#include <filesystem>
#include <span>

namespace memtrail::snapshot {

/// Writes `bytes` to `path` as above.
/// @throws std::system_error "PATH: what failed: the system's reason", or for a refused kind of
///         file "PATH: is a directory, not a file to write; ...".
void write_output_file(const std::filesystem::path& path, std::span<const uint8_t> bytes);

/// Writes `bytes` to an open descriptor (standard output), every write checked.
/// @throws std::system_error "NAME: cannot write: reason".
void write_to_descriptor(int fd, const char* name, std::span<const uint8_t> bytes);

}  // namespace memtrail::snapshot
