#pragma once
// Where a recording process's attach endpoint is, and the checks that keep it its owner's: one
// Unix socket per process, named by its pid, in a folder of the user's own
// (/tmp/memtrail-<uid>, mode 0700). The folder is the first guard (nobody else can reach the
// sockets in it), the peer-credential check on every connection the second.

#include <sys/types.h>

#include <cstddef>
#include <filesystem>
#include <stdexcept>
#include <string>

namespace memtrail::live {

// A folder or socket that is not safe to use, or a peer that may not attach; the message says
// which and why.
class endpoint_error : public std::runtime_error {
  public:
    using std::runtime_error::runtime_error;
};

// /tmp/memtrail-<uid>: the same for every process of one user, whatever its environment (a job
// under a batch system has no XDG_RUNTIME_DIR of the user's shell).
std::filesystem::path endpoint_folder(uid_t user);
// The socket of process `pid` in `folder`: "<pid>.sock".
std::filesystem::path endpoint_path(const std::filesystem::path& folder, pid_t pid);

/// Removes the sockets in `folder` of processes that no longer exist ("<pid>.sock" where no
/// process `pid` runs): a process killed, or a forked child ended by _exit() (a DataLoader's
/// worker), cannot remove its own. Anything else is left: other files, a socket whose pid runs
/// (the client says when it is stale). Returns how many were removed; never throws.
size_t remove_dead_endpoints(const std::filesystem::path& folder);

/// Makes `folder` (mode 0700) if it does not exist, then checks it as check_private_folder.
/// @throws endpoint_error as check_private_folder; std::system_error when it cannot be made.
void make_private_folder(const std::filesystem::path& folder, uid_t user);

/// Checks that `folder` is a directory (not a symbolic link to one) owned by `user` that no other
/// user can enter or write (no group or other permission bits).
/// @throws endpoint_error naming the folder and what is wrong with it.
void check_private_folder(const std::filesystem::path& folder, uid_t user);

/// Whether the process at the other end of the connected Unix socket `fd` runs as `user`
/// (SO_PEERCRED). `peer_user` receives the peer's uid.
/// @throws std::system_error when the credentials cannot be read.
bool peer_runs_as(int fd, uid_t user, uid_t& peer_user);

}  // namespace memtrail::live
