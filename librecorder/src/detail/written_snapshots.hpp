#pragma once
// The list of snapshots a `memtrail run` tree wrote: every process (each rank under torchrun, the
// launcher's children, forked children) adds the path of each snapshot it writes to the one file
// MEMTRAIL_RUN_FILES names, and `memtrail run` reads it when the program ends, to name them all.

#include <string>

namespace memtrail::recorder::librecorder {

// Adds `snapshot`'s absolute path, as one line, to `list` (nothing when `list` is ""). One
// write() in append mode, so that lines of processes writing at once never interleave. A
// failure is said on stderr; the snapshot itself is written already.
void note_written_snapshot(const std::string& list, const std::string& snapshot);

}  // namespace memtrail::recorder::librecorder
