#pragma once
// PyTorch's own frames and the Python interpreter's C frames, hidden from every report, view and
// export unless asked for. With C++ stacks (stacks="all") every PyTorch stack starts with its
// unwinder, its caching allocator and the dispatcher's plumbing, and Python frames sit between
// the interpreter's evaluation loop and call machinery: without them the innermost frame is the
// user's code.
//
// The rules are those of PyTorch's own viewer (torch/cuda/_memory_viz.py's _frame_filter), plus
// the caching allocator and tensor-creation plumbing it leaves in, and the interpreter's C frames
// by their C API names, their CPython source folders or the python binary they run in. Only
// native frames are ever hidden: Python frames are the user's code, or PyTorch's Python code the
// user called.

#include <memory>

#include "memtrail/snapshot/model.hpp"

namespace memtrail::analysis {

enum class frame_visibility {
    user_frames,  // the default: PyTorch's and the interpreter's own frames hidden
    all_frames,   // every frame as recorded
};

// Whether frame `id` of `source` is one of PyTorch's own or the interpreter's C frames.
bool is_framework_frame(const snapshot::snapshot& source, snapshot::frame_id id);

// `source` as the reports see it: with user_frames, a copy whose every stack (trace entries,
// segments, blocks) keeps only the frames that are not framework frames, interned again so that
// stacks differing only in hidden frames are one stack. A stack made only of framework frames is
// kept whole, so it still says where the memory came from. Returns `source` itself with
// all_frames, or when nothing would be hidden. Strings and frames keep their ids.
std::shared_ptr<const snapshot::snapshot> with_frame_visibility(
    std::shared_ptr<const snapshot::snapshot> source, frame_visibility visibility);

}  // namespace memtrail::analysis
