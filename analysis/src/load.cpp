#include "memtrail/analysis/load.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <span>
#include <vector>

#include "memtrail/snapshot/format_error.hpp"
#include "memtrail/snapshot/load.hpp"

namespace memtrail::analysis {
namespace {

// A file's bytes: a regular file is mapped (a large snapshot costs no copy and no fresh memory;
// snapshots are replaced by rename, not rewritten in place), anything else (a pipe) is read.
class file_bytes {
  public:
    explicit file_bytes(const std::filesystem::path& path) {
        std::error_code error;
        if (std::filesystem::is_directory(path, error)) {
            throw load_error(path.string() + ": is a directory, not a snapshot file");
        }
        const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
        if (fd < 0) {
            throw load_error(path.string() + ": cannot open: " + std::strerror(errno));
        }
        struct stat info {};
        if (::fstat(fd, &info) == 0 && S_ISREG(info.st_mode) && info.st_size > 0) {
            const auto size = static_cast<size_t>(info.st_size);
            void* mapped = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0);
            if (mapped != MAP_FAILED) {
                mapping_ = mapped;
                bytes_ = {static_cast<const uint8_t*>(mapped), size};
            }
        }
        ::close(fd);
        if (mapping_ == nullptr) {
            read_through(path);
        }
    }
    file_bytes(const file_bytes&) = delete;
    file_bytes& operator=(const file_bytes&) = delete;
    ~file_bytes() {
        if (mapping_ != nullptr) {
            ::munmap(mapping_, bytes_.size());
        }
    }

    std::span<const uint8_t> bytes() const { return bytes_; }

  private:
    void read_through(const std::filesystem::path& path) {
        std::ifstream in(path, std::ios::binary);
        if (!in) {
            throw load_error(path.string() + ": cannot open: " + std::strerror(errno));
        }
        std::array<uint8_t, 1 << 16> buffer{};
        while (in.read(reinterpret_cast<char*>(buffer.data()), buffer.size()) || in.gcount() > 0) {
            read_.insert(read_.end(), buffer.begin(), buffer.begin() + in.gcount());
        }
        if (in.bad()) {
            throw load_error(path.string() + ": read failed");
        }
        bytes_ = read_;
    }

    void* mapping_ = nullptr;
    std::vector<uint8_t> read_;
    std::span<const uint8_t> bytes_;
};

}  // namespace

loaded_snapshot load_snapshot(const std::filesystem::path& path) {
    const file_bytes file(path);
    const std::span<const uint8_t> bytes = file.bytes();
    if (bytes.empty()) {
        throw load_error(path.string() + ": the file is empty");
    }
    loaded_snapshot loaded;
    switch (snapshot::detect_file_kind(bytes)) {
        case snapshot::file_kind::memtrail:
            loaded.kind = file_kind::memtrail_snapshot;
            break;
        case snapshot::file_kind::torch_pickle:
            loaded.kind = file_kind::torch_pickle;
            break;
        case snapshot::file_kind::unknown:
            throw load_error(path.string() +
                             ": not a memtrail snapshot (plain or zstd) nor a PyTorch snapshot "
                             "pickle (protocol 2 or later)");
    }
    try {
        loaded.snapshot = std::make_shared<snapshot::snapshot>(snapshot::load_snapshot(bytes));
    } catch (const snapshot::format_error& e) {
        throw load_error(path.string() + ": " + e.what());
    }
    return loaded;
}

}  // namespace memtrail::analysis
