// Where an output goes: resolved through symbolic links, then written by kind of file.

#include "memtrail/snapshot/output_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <string>
#include <system_error>

#include "detail/file_io.hpp"

namespace memtrail::snapshot {

namespace {

[[noreturn]] void fail(const std::filesystem::path& path, const std::string& what, int error) {
    throw std::system_error(error, std::generic_category(), path.string() + ": " + what);
}

// What `path` finally names when it is a symbolic link (a chain of them), relative targets
// taken from the link's own folder; `path` itself when it is none.
std::filesystem::path final_target(const std::filesystem::path& path) {
    constexpr int max_links = 40;  // as the kernel's ELOOP
    std::filesystem::path current = path;
    for (int i = 0; i < max_links; ++i) {
        std::error_code error;
        if (!std::filesystem::is_symlink(std::filesystem::symlink_status(current, error))) {
            return current;
        }
        const std::filesystem::path target = std::filesystem::read_symlink(current, error);
        if (error) {
            fail(current, "cannot read the symbolic link", error.value());
        }
        current = target.is_absolute() ? target : current.parent_path() / target;
    }
    fail(path, "cannot write through the symbolic link", ELOOP);
}

void write_directly(const std::filesystem::path& path, std::span<const uint8_t> bytes) {
    const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) {
        fail(path, "cannot open for writing", errno);
    }
    try {
        write_to_descriptor(fd, path.c_str(), bytes);
    } catch (...) {
        ::close(fd);
        throw;
    }
    if (::close(fd) != 0) {
        fail(path, "cannot close", errno);
    }
}

}  // namespace

void write_to_descriptor(int fd, const char* name, std::span<const uint8_t> bytes) {
    size_t written = 0;
    while (written < bytes.size()) {
        const ssize_t n = ::write(fd, bytes.data() + written, bytes.size() - written);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n < 0) {
            fail(name, "cannot write", errno);
        }
        written += static_cast<size_t>(n);
    }
}

void write_output_file(const std::filesystem::path& path, std::span<const uint8_t> bytes) {
    const std::filesystem::path target = final_target(path);
    struct stat info {};
    if (::stat(target.c_str(), &info) != 0) {
        if (errno != ENOENT) {
            fail(target, "cannot stat", errno);
        }
        detail::write_file_atomically(target, bytes);
        return;
    }
    if (S_ISREG(info.st_mode)) {
        detail::write_file_atomically(target, bytes);
    } else if (S_ISCHR(info.st_mode) || S_ISFIFO(info.st_mode)) {
        write_directly(target, bytes);
    } else {
        const char* kind = S_ISDIR(info.st_mode)    ? "a directory"
                           : S_ISBLK(info.st_mode)  ? "a block device"
                           : S_ISSOCK(info.st_mode) ? "a socket"
                                                    : "a special file";
        throw std::system_error(std::make_error_code(std::errc::invalid_argument),
                                target.string() + ": is " + kind +
                                    ", not a file to write; give the path of a file, a "
                                    "character device or a FIFO");
    }
}

}  // namespace memtrail::snapshot
