#pragma once
// The one way to open a snapshot file: any file memtrail understands, recognised by its first
// bytes rather than its name: a memtrail snapshot ("MEMTRAIL", or a zstd frame around one) or a
// PyTorch snapshot pickle (pickle protocol 2 or later starts with the PROTO opcode 0x80). Only
// regular files are opened by path, and a stream (standard input) is read up to a cap; the CLI, the
// viewer, replay and the tests all open files through here.

#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <string>

#include "memtrail/snapshot/format_error.hpp"
#include "memtrail/snapshot/model.hpp"

namespace memtrail::snapshot {

enum class file_kind : uint8_t { memtrail, torch_pickle, unknown };

file_kind detect_file_kind(std::span<const uint8_t> bytes);

/// @throws format_error for unknown or damaged content (format_error.hpp, with load_error).
snapshot load_snapshot(std::span<const uint8_t> bytes);

struct loaded_snapshot {
    std::shared_ptr<const memtrail::snapshot::snapshot> snapshot;
    file_kind kind = file_kind::memtrail;
};

/// Opens the regular file `path` and reads the snapshot in it, whichever its format.
/// @throws load_error "PATH: reason" when the file cannot be opened, is not a regular file (a
///         FIFO or a device is refused without waiting on it), is empty, or is not a snapshot.
loaded_snapshot load_snapshot(const std::filesystem::path& path);

/// The most bytes load_snapshot_from_stream reads by default: 4 GiB. A stream has no size to
/// check before reading, so it is read into memory up to this cap; a larger snapshot is opened as
/// a file, whose size is known before it is read. The decompression limits apply after it as to
/// any file.
inline constexpr size_t stream_read_limit = size_t{4} << 30;

/// Reads the snapshot on the open descriptor `fd` (standard input, a pipe) to its end, whichever
/// its format, as load_snapshot(path) reads a file; `name` stands for the path in messages
/// ("standard input"). The descriptor is not closed.
/// @throws load_error "NAME: reason" past `limit` bytes, when it cannot be read, is empty or is
///         not a snapshot.
loaded_snapshot load_snapshot_from_stream(int fd, const std::string& name,
                                          size_t limit = stream_read_limit);

}  // namespace memtrail::snapshot
