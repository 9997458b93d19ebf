#pragma once
// What the commands that attach to a running process (snapshot, top --attach) share: the pid
// argument and the snapshot model of what the endpoint sends.

#include <sys/types.h>

#include <string_view>

#include "memtrail/live/client.hpp"
#include "memtrail/snapshot/model.hpp"

namespace memtrail::cli {

// A process id: a whole number above 0. @throws usage_error naming `what` and the text.
pid_t parse_pid(std::string_view what, std::string_view text);

// The snapshot a frame of the endpoint carries (msgpack). @throws snapshot::load_error naming
// the process when it cannot be read.
snapshot::snapshot snapshot_of(const live::frame& received, pid_t pid);

}  // namespace memtrail::cli
