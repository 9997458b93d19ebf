#include "memtrail/live/endpoint_folder.hpp"

#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <csignal>
#include <string_view>
#include <system_error>

namespace memtrail::live {

std::filesystem::path endpoint_folder(uid_t user) {
    return "/tmp/memtrail-" + std::to_string(user);
}

std::filesystem::path endpoint_path(const std::filesystem::path& folder, pid_t pid) {
    return folder / (std::to_string(pid) + ".sock");
}

size_t remove_dead_endpoints(const std::filesystem::path& folder) {
    size_t removed = 0;
    std::error_code error;
    std::filesystem::directory_iterator entry(folder, error);
    for (; !error && entry != std::filesystem::directory_iterator(); entry.increment(error)) {
        const std::string name = entry->path().filename().string();
        constexpr std::string_view suffix = ".sock";
        if (name.size() <= suffix.size() || !name.ends_with(suffix)) {
            continue;
        }
        const char* digits_end = name.data() + name.size() - suffix.size();
        pid_t pid = 0;
        const auto [end, parsed] = std::from_chars(name.data(), digits_end, pid);
        if (parsed != std::errc() || end != digits_end || pid <= 0) {
            continue;
        }
        struct stat info {};
        if (::kill(pid, 0) != 0 && errno == ESRCH && ::lstat(entry->path().c_str(), &info) == 0 &&
            S_ISSOCK(info.st_mode) && ::unlink(entry->path().c_str()) == 0) {
            ++removed;
        }
    }
    return removed;
}

void make_private_folder(const std::filesystem::path& folder, uid_t user) {
    if (::mkdir(folder.c_str(), 0700) != 0 && errno != EEXIST) {
        throw std::system_error(errno, std::generic_category(),
                                "cannot make the attach folder " + folder.string());
    }
    check_private_folder(folder, user);
}

void check_private_folder(const std::filesystem::path& folder, uid_t user) {
    struct stat info {};
    if (::lstat(folder.c_str(), &info) != 0) {
        throw endpoint_error("the attach folder " + folder.string() +
                             " cannot be read: " + std::generic_category().message(errno));
    }
    const std::string unsafe = "the attach folder " + folder.string() + " is ";
    if (S_ISLNK(info.st_mode)) {
        throw endpoint_error(unsafe + "a symbolic link; only a real folder is used (remove it)");
    }
    if (!S_ISDIR(info.st_mode)) {
        throw endpoint_error(unsafe + "not a folder (remove it)");
    }
    if (info.st_uid != user) {
        throw endpoint_error(unsafe + "owned by uid " + std::to_string(info.st_uid) +
                             ", not by uid " + std::to_string(user) +
                             "; only the user's own folder is used");
    }
    if ((info.st_mode & 077) != 0) {
        throw endpoint_error(unsafe + "open to other users (mode " +
                             std::to_string((info.st_mode >> 6) & 7) +
                             std::to_string((info.st_mode >> 3) & 7) +
                             std::to_string(info.st_mode & 7) + "); it must be 700");
    }
}

bool peer_runs_as(int fd, uid_t user, uid_t& peer_user) {
    struct ucred credentials {};
    socklen_t length = sizeof(credentials);
    if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &credentials, &length) != 0) {
        throw std::system_error(errno, std::generic_category(),
                                "cannot read the peer's credentials");
    }
    peer_user = credentials.uid;
    return credentials.uid == user;
}

}  // namespace memtrail::live
