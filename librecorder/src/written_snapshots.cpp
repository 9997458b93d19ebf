#include "detail/written_snapshots.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

namespace memtrail::recorder::librecorder {

void note_written_snapshot(const std::string& list, const std::string& snapshot) {
    if (list.empty()) {
        return;
    }
    std::error_code error;
    const std::filesystem::path absolute = std::filesystem::absolute(snapshot, error);
    const std::string line = (error ? snapshot : absolute.string()) + "\n";
    const int fd = ::open(list.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
    const bool written =
        fd >= 0 && ::write(fd, line.data(), line.size()) == static_cast<ssize_t>(line.size());
    const int saved_errno = errno;
    if (fd >= 0) {
        ::close(fd);
    }
    if (!written) {
        std::fprintf(stderr, "memtrail: %s is not on memtrail run's list %s: %s\n",
                     snapshot.c_str(), list.c_str(), std::strerror(saved_errno));
    }
}

}  // namespace memtrail::recorder::librecorder
