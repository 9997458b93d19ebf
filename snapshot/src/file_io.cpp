#include "detail/file_io.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <string>
#include <string_view>
#include <system_error>

#include "memtrail/snapshot/load.hpp"

namespace memtrail::snapshot::detail {

namespace {

// The message reads "PATH: what: reason", the path first as every load error.
[[noreturn]] void throw_errno(const std::string& what, const std::filesystem::path& path) {
    throw std::system_error(errno, std::generic_category(), path.string() + ": " + what);
}

const char* file_type_name(mode_t mode) {
    if (S_ISDIR(mode)) {
        return "a directory";
    }
    if (S_ISFIFO(mode)) {
        return "a FIFO (named pipe)";
    }
    if (S_ISCHR(mode)) {
        return "a character device";
    }
    if (S_ISBLK(mode)) {
        return "a block device";
    }
    if (S_ISSOCK(mode)) {
        return "a socket";
    }
    return "a special file";
}

// Closes the descriptor on every path out, including exceptions.
class file_descriptor {
  public:
    explicit file_descriptor(int fd) : fd_(fd) {}
    file_descriptor(const file_descriptor&) = delete;
    file_descriptor& operator=(const file_descriptor&) = delete;
    ~file_descriptor() {
        if (fd_ >= 0) {
            ::close(fd_);
        }
    }
    int get() const { return fd_; }
    int release() {
        const int fd = fd_;
        fd_ = -1;
        return fd;
    }

  private:
    int fd_;
};

// The temporary file's name for `path`: "<path>.<pid>.<n>.tmp".
// The part of a target's name its temporary files start with: the whole name, unless the
// ".<pid>.<n>.tmp" after it would pass the longest name a folder takes (NAME_MAX).
std::string temporary_stem(const std::string& target_name) {
    constexpr size_t longest_name = 255;
    constexpr size_t longest_suffix = 1 + 10 + 1 + 20 + 4;
    return target_name.size() + longest_suffix <= longest_name
               ? target_name
               : target_name.substr(0, longest_name - longest_suffix);
}

std::filesystem::path temporary_for(const std::filesystem::path& path, uint64_t n) {
    return path.parent_path() / (temporary_stem(path.filename().string()) + "." +
                                 std::to_string(::getpid()) + "." + std::to_string(n) + ".tmp");
}

// The writer's pid when `name` is a temporary file of a target whose temporary_stem is
// `target_name` ("<target_name>.<pid>.<n>.tmp"), else 0.
pid_t writer_of_temporary(std::string_view name, std::string_view target_name) {
    constexpr std::string_view suffix = ".tmp";
    if (name.size() <= target_name.size() + 1 + suffix.size() || !name.starts_with(target_name) ||
        name[target_name.size()] != '.' || !name.ends_with(suffix)) {
        return 0;
    }
    const std::string_view middle =
        name.substr(target_name.size() + 1, name.size() - target_name.size() - 1 - suffix.size());
    const size_t dot = middle.find('.');
    const auto digits = [](std::string_view text) {
        return !text.empty() && text.find_first_not_of("0123456789") == std::string_view::npos;
    };
    if (dot == std::string_view::npos || !digits(middle.substr(0, dot)) ||
        !digits(middle.substr(dot + 1)) || dot > 9) {
        return 0;
    }
    return static_cast<pid_t>(std::stoll(std::string(middle.substr(0, dot))));
}

// Removes the temporary files of `path` whose writers died mid-write (killed, say): a process
// that no longer runs will never finish or remove them. Those of running processes, this one's
// included, are left alone. Best effort: what cannot be listed or removed stays.
void remove_stale_temporaries(const std::filesystem::path& path) {
    const auto folder = path.has_parent_path() ? path.parent_path() : std::filesystem::path(".");
    const std::string target_name = temporary_stem(path.filename().string());
    std::error_code error;
    for (std::filesystem::directory_iterator it(folder, error), end; !error && it != end;
         it.increment(error)) {
        const pid_t writer = writer_of_temporary(it->path().filename().string(), target_name);
        if (writer > 0 && writer != ::getpid() && ::kill(writer, 0) != 0 && errno == ESRCH) {
            ::unlink(it->path().c_str());
        }
    }
}

}  // namespace

file_bytes::file_bytes(const std::filesystem::path& path) {
    // O_NONBLOCK: opening a FIFO with no writer would otherwise wait forever, before the check.
    file_descriptor fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
    if (fd.get() < 0) {
        throw_errno("cannot open", path);
    }
    struct stat before {};
    if (::fstat(fd.get(), &before) != 0) {
        throw_errno("cannot stat", path);
    }
    if (!S_ISREG(before.st_mode)) {
        throw load_error(path.string() + ": is " + file_type_name(before.st_mode) +
                         ", not a regular file; snapshots are read only from regular files "
                         "(FIFOs, devices, sockets and directories are refused)");
    }
    const auto expected = static_cast<size_t>(before.st_size);
    bytes_.reset(new uint8_t[expected + 1]);  // one byte more tells a file that grew
    while (size_ <= expected) {
        const ssize_t n = ::read(fd.get(), bytes_.get() + size_, expected + 1 - size_);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n < 0) {
            throw_errno("cannot read", path);
        }
        if (n == 0) {
            break;
        }
        size_ += static_cast<size_t>(n);
    }
    // Rewritten in place while read: what was read may mix the old file and the new.
    struct stat after {};
    const bool changed = size_ != expected || ::fstat(fd.get(), &after) != 0 ||
                         after.st_size != before.st_size ||
                         after.st_mtim.tv_sec != before.st_mtim.tv_sec ||
                         after.st_mtim.tv_nsec != before.st_mtim.tv_nsec;
    if (changed) {
        throw load_error(path.string() + ": the file changed while it was read (" +
                         std::to_string(expected) + " bytes when opened, " +
                         (size_ > expected ? "more" : std::to_string(size_)) +
                         " read); read it again once it is completely written");
    }
}

std::vector<uint8_t> read_stream(int fd, const std::string& name, size_t limit) {
    constexpr size_t first_chunk = size_t{1} << 20;
    std::vector<uint8_t> bytes;
    size_t done = 0;
    for (;;) {
        if (done == bytes.size()) {
            if (done > limit) {
                throw load_error(name + ": more than " + std::to_string(limit) +
                                 " bytes, the most read from a stream; save it to a file and "
                                 "open the file instead");
            }
            // One byte past the limit tells a stream of exactly `limit` bytes from a longer one.
            bytes.resize(std::min(limit + 1, std::max(first_chunk, done * 2)));
        }
        const ssize_t n = ::read(fd, bytes.data() + done, bytes.size() - done);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n < 0) {
            throw std::system_error(errno, std::generic_category(), name + ": cannot read");
        }
        if (n == 0) {
            break;
        }
        done += static_cast<size_t>(n);
    }
    bytes.resize(done);
    return bytes;
}

void write_file_atomically(const std::filesystem::path& path, std::span<const uint8_t> bytes) {
    // pid plus a counter keeps concurrent writers (threads, processes) off each other's file.
    static std::atomic<uint64_t> counter{0};
    remove_stale_temporaries(path);
    const std::filesystem::path temporary = temporary_for(path, counter++);

    file_descriptor fd(::open(temporary.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644));
    if (fd.get() < 0) {
        throw_errno("cannot create", temporary);
    }
    const auto fail = [&](const char* what) {
        const int saved = errno;
        ::unlink(temporary.c_str());
        errno = saved;
        throw_errno(what, temporary);
    };
    size_t written = 0;
    while (written < bytes.size()) {
        const ssize_t n = ::write(fd.get(), bytes.data() + written, bytes.size() - written);
        if (n < 0) {
            if (errno == EINTR) {
                continue;
            }
            fail("cannot write");
        }
        written += static_cast<size_t>(n);
    }
    if (::fsync(fd.get()) != 0) {
        fail("cannot fsync");
    }
    if (::close(fd.release()) != 0) {
        fail("cannot close");
    }
    if (::rename(temporary.c_str(), path.c_str()) != 0) {
        const int saved = errno;
        ::unlink(temporary.c_str());
        errno = saved;
        throw_errno("cannot rename the written file into place as", path);
    }
    // Make the rename itself durable; a folder that cannot be opened is not an error for the
    // caller, the file is already complete.
    const auto folder = path.has_parent_path() ? path.parent_path() : std::filesystem::path(".");
    file_descriptor dir(::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (dir.get() >= 0) {
        ::fsync(dir.get());
    }
}

}  // namespace memtrail::snapshot::detail
