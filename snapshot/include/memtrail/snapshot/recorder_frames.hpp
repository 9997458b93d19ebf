#pragma once
// The frames of the recording itself: memtrail's own code (its C API, librecorder, the
// interposer), the ctypes and libffi call machinery the Python package calls it through, and the
// Python package's own files. They say nothing about where memory was asked for, so the recorder
// leaves them out of the stacks it writes and the reports drop them from snapshots written before.

#include <string_view>

#include "memtrail/snapshot/model.hpp"

namespace memtrail::snapshot {

// Whether a frame of `kind`, with these strings of its function, source file and module (shared
// object, native frames), belongs to the recording machinery.
bool is_recording_machinery(frame_kind kind, std::string_view function, std::string_view file,
                            std::string_view module);

// The same for frame `id` of `source`.
bool is_recording_machinery(const snapshot& source, frame_id id);

}  // namespace memtrail::snapshot
