#pragma once
// The processes of this user a viewer can attach to (File > Attach): those with an endpoint in
// the user's endpoint folder (docs/live.md) that still run.

#include <sys/types.h>

#include <filesystem>
#include <string>
#include <vector>

namespace memtrail::viewer {

struct attachable_process {
    pid_t pid = 0;
    std::string command;  // its command line, arguments separated by spaces
};

/// The processes with a socket "<pid>.sock" in `folder` that still run, by pid, this process left
/// out. None when the folder does not exist (no process has recorded with memtrail yet).
/// @throws live::endpoint_error when the folder is not safe to use (another user's, open to
///         others, a symbolic link).
std::vector<attachable_process> attachable_processes(const std::filesystem::path& folder);

// /proc/PID/cmdline with spaces between the arguments; "" when the process is gone.
std::string command_line_of(pid_t pid);

}  // namespace memtrail::viewer
