#pragma once
// The one way snapshot files are opened, and atomic writes, shared by the pickle and msgpack
// formats and by load_snapshot.

#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace memtrail::snapshot::detail {

// The whole content of a regular file, read into memory. Not mapped: a mapped file that shrinks
// while it is read (PyTorch's _dump_snapshot and cp rewrite files in place) kills the reader with
// SIGBUS; a read sees the change instead. Only regular files are accepted: a FIFO, a device
// (/dev/zero), a socket or a directory could block or never end, so it is refused right after a
// non-blocking open.
class file_bytes {
  public:
    // Throws std::system_error ("PATH: cannot open: reason") when the file cannot be opened or
    // read, load_error when it is not a regular file or changed while it was read ("PATH: the
    // file changed while it was read ...").
    explicit file_bytes(const std::filesystem::path& path);
    file_bytes(const file_bytes&) = delete;
    file_bytes& operator=(const file_bytes&) = delete;

    const uint8_t* data() const { return bytes_.get(); }
    size_t size() const { return size_; }
    const uint8_t* begin() const { return data(); }
    const uint8_t* end() const { return data() + size(); }

  private:
    std::unique_ptr<uint8_t[]> bytes_;  // not value-initialised: no pass to zero it first
    size_t size_ = 0;
};

// Opens `path` as above; the name is kept for the format readers' path overloads.
inline file_bytes read_whole_file(const std::filesystem::path& path) {
    return file_bytes(path);
}

// Everything left on the descriptor `fd` (a pipe, standard input) read to its end, refused with
// load_error ("NAME: ...") once it passes `limit` bytes: a stream has no size to check first, so
// memory stays bounded by the limit. Throws std::system_error ("NAME: cannot read: reason").
std::vector<uint8_t> read_stream(int fd, const std::string& name, size_t limit);

// Writes to a temporary file in the same folder, fsyncs it and renames it over `path`, so a reader
// sees the old file or the complete new one, never a part. Temporary files of `path` left by
// writers that no longer run (killed mid-write) are removed first. Throws std::system_error.
void write_file_atomically(const std::filesystem::path& path, std::span<const uint8_t> bytes);

}  // namespace memtrail::snapshot::detail
