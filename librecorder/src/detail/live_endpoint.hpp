#pragma once
// The attach endpoint of a recording process (docs/live.md): a Unix socket in the user's own
// folder, named by pid, served by one thread blocked in accept() while nobody is attached, so
// the allocation path does no work for it. Each client gets a thread of its own, which checks its
// peer's uid (SO_PEERCRED), then answers snapshot requests and streams events read from the
// recorder's ring in short holds of the device's lock. A forked child opens an endpoint of its
// own; the socket file is removed at exit.

#include "memtrail/recorder/recorder.hpp"

namespace memtrail::recorder::librecorder {

// Opens this process's endpoint for `history`, which must live until the process ends. A folder
// or socket that cannot be used safely is said once on stderr and the process runs without an
// endpoint. Call once.
void open_live_endpoint(recorder& history);

}  // namespace memtrail::recorder::librecorder
