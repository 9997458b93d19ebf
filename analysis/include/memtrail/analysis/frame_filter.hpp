#pragma once
// Stacks as the reports show them: from the innermost frame of interest to the user's own code,
// with the frameworks' plumbing between folded into one line that says what it holds.
//
// Every frame has a role. PyTorch's own C++ frames (its unwinder, caching allocator and
// dispatcher, by the rules of PyTorch's viewer, torch/cuda/_memory_viz.py's _frame_filter, plus
// the tensor-creation and autograd plumbing it leaves in), the interpreter's C frames and
// PyTorch's Python call machinery (nn.Module's _call_impl, _apply recursion, optimizer wrappers,
// autograd) are plumbing. Other frames of PyTorch, the Python standard library and the packages
// under site-packages are library code; the rest is the user's. The recording machinery
// (memtrail's own frames, ctypes, libffi: snapshot/recorder_frames.hpp) is never shown.

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "memtrail/snapshot/model.hpp"

namespace memtrail::analysis {

enum class frame_visibility {
    user_frames,  // the default: plumbing folded, from the innermost frame of interest outward
    all_frames,   // every frame as recorded, less the recording machinery
};

enum class frame_role : uint8_t {
    plumbing,  // folded wherever it lies between shown frames
    library,   // shown when innermost, folded between the innermost frame and the user's
    user,      // the user's own code
};

// Whether frame `id` of `source` is one of PyTorch's own C++ frames or the interpreter's C frames.
bool is_framework_frame(const snapshot::snapshot& source, snapshot::frame_id id);

frame_role role_of(const snapshot::snapshot& source, snapshot::frame_id id);

// What a folded frame belongs to, for the line that stands for a folded run: "torch.nn",
// "transformers", "threading" (Python frames by package), "PyTorch C++", "CPython", "C runtime",
// "native".
std::string frame_origin(const snapshot::snapshot& source, snapshot::frame_id id);

// A folded run's line without its length ("... frames of torch.nn"), any other label as it is:
// stacks of two files are matched alike when only the lengths of their folded runs differ.
std::string without_run_length(std::string_view label);

// The user's own innermost frame of `stack` (the lines of folded runs skipped), or no_id when
// it has none.
snapshot::frame_id users_frame(const snapshot::snapshot& source, snapshot::stack_id stack);

// `source` as the reports see it; the recording machinery is left out of every stack (trace
// entries, segments, blocks) either way. With user_frames each stack becomes:
//   - its innermost frame that is not plumbing (the plumbing inside it, the unwinder and the
//     caching allocator, left out),
//   - one line "... N frames of torch.nn, transformers" for every frame from there to the
//     user's own innermost frame (in a stack with none, a library's worker thread, to the
//     innermost Python frame when the innermost frame is C++),
//   - the user's frame and the frames outside it, each run of plumbing between them folded the
//     same way (plumbing outside the outermost shown frame left out),
// and stacks that fold alike are one stack: a folded line counts "5 to 9 frames" when the stacks
// it stands for differ in length (nn.Module._apply recursion depth, say). A stack of plumbing
// alone is kept whole. Strings and frames keep their ids (the folded lines are added frames).
// Returns `source` itself when nothing changes.
std::shared_ptr<const snapshot::snapshot> with_frame_visibility(
    std::shared_ptr<const snapshot::snapshot> source, frame_visibility visibility);

// The stacks as with_frame_visibility folds them, without copying the trace: `tables` holds the
// folded strings, frames and stacks (`source` itself when folding changes nothing) and
// stack_of[s] is the folded id of `source`'s stack s. A summary folds the stacks of a few
// blocks this way from one model built over every frame.
struct folded_stack_table {
    std::shared_ptr<const snapshot::snapshot> tables;
    std::vector<snapshot::stack_id> stack_of;
};
folded_stack_table fold_stack_table(std::shared_ptr<const snapshot::snapshot> source,
                                    frame_visibility visibility);

}  // namespace memtrail::analysis
