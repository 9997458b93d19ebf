#include "memtrail/stacks/stack_converter.hpp"

#include <algorithm>
#include <string_view>

#include "detail/python_stack.hpp"
#include "memtrail/snapshot/recorder_frames.hpp"

namespace memtrail::recorder::detail {

namespace {

// A frame of CPython's evaluation loop, in libpython or a python executable: where the Python
// frames belong in a native stack.
bool in_interpreter_loop(const native_frame& frame) {
    const std::string_view function = frame.function;
    if (!function.starts_with("_PyEval_EvalFrame") && !function.starts_with("PyEval_EvalCode")) {
        return false;
    }
    const std::string_view module = frame.module;
    const std::string_view file = module.substr(module.find_last_of('/') + 1);
    return file.starts_with("libpython") || file.starts_with("python");
}

}  // namespace

stack_converter::stack_converter(const stack_table& stacks, snapshot::snapshot& out,
                                 symbol_cache* symbols)
    : stacks_(stacks),
      out_(out),
      symbols_(symbols != nullptr ? *symbols : own_symbols_.emplace()) {}

stack_converter::~stack_converter() {
    symbols_.end_batch();
}

const stack_converter::symbolized_address& stack_converter::symbolize_address(
    uintptr_t return_address) {
    auto [it, inserted] = addresses_.try_emplace(return_address);
    if (!inserted) {
        return it->second;
    }
    for (const native_frame& frame : symbols_.native(return_address)) {
        it->second.in_interpreter_loop |= in_interpreter_loop(frame);
        // memtrail's own frames and the ctypes and libffi calls into it say nothing of the user's.
        if (snapshot::is_recording_machinery(snapshot::frame_kind::native, frame.function,
                                             frame.filename, frame.module)) {
            continue;
        }
        snapshot::frame converted;
        converted.function = out_.intern_string(frame.function);
        converted.filename = out_.intern_string(frame.filename);
        converted.line = frame.line;
        converted.module = out_.intern_string(frame.module);
        converted.module_offset = frame.module_offset;
        converted.build_id = out_.intern_string(frame.build_id);
        converted.kind = snapshot::frame_kind::native;
        it->second.frames.push_back(out_.intern_frame(converted));
    }
    return it->second;
}

snapshot::frame_id stack_converter::python_frame_at(uintptr_t code, uintptr_t location) {
    auto [it, inserted] = python_frames_.try_emplace({code, location}, snapshot::no_id);
    if (!inserted) {
        return it->second;
    }
    const python_frame& frame = symbols_.python(code, location);
    if (snapshot::is_recording_machinery(snapshot::frame_kind::python, frame.function,
                                         frame.filename, {})) {
        return snapshot::no_id;  // the memtrail package's own files
    }
    snapshot::frame converted;
    converted.function = out_.intern_string(frame.function);
    converted.filename = out_.intern_string(frame.filename);
    converted.line = frame.line;
    converted.kind = snapshot::frame_kind::python;
    it->second = out_.intern_frame(converted);
    return it->second;
}

std::vector<snapshot::frame_id> stack_converter::python_frames(std::span<const uintptr_t> pairs) {
    std::vector<snapshot::frame_id> frames;
    for (size_t i = 0; i + 1 < pairs.size(); i += 2) {
        const snapshot::frame_id frame = python_frame_at(pairs[i], pairs[i + 1]);
        if (frame != snapshot::no_id) {
            frames.push_back(frame);
        }
    }
    return frames;
}

snapshot::stack_id stack_converter::convert(stack_id id) {
    if (id == no_stack) {
        return snapshot::no_id;
    }
    auto [it, inserted] = converted_.try_emplace(id, snapshot::no_id);
    if (!inserted) {
        return it->second;
    }
    const std::vector<uintptr_t> words = stacks_.frames_of(id);
    const auto marker = std::find(words.begin(), words.end(), python_frames_marker);
    std::vector<snapshot::frame_id> frames;
    // The run of native frames from the innermost evaluation loop frame to the outermost one.
    size_t loop_first = 0;
    size_t loop_end = 0;
    for (auto word = words.begin(); word != marker; ++word) {
        const symbolized_address& address = symbolize_address(*word);
        if (address.in_interpreter_loop) {
            if (loop_end == 0) {
                loop_first = frames.size();
            }
            loop_end = frames.size() + address.frames.size();
        }
        frames.insert(frames.end(), address.frames.begin(), address.frames.end());
    }
    if (marker != words.end()) {
        const std::vector<snapshot::frame_id> python =
            python_frames(std::span<const uintptr_t>(marker + 1, words.end()));
        // The Python frames replace the interpreter's own run, or follow the native frames.
        const auto first =
            frames.begin() + static_cast<ptrdiff_t>(loop_end != 0 ? loop_first : frames.size());
        const auto last =
            frames.begin() + static_cast<ptrdiff_t>(loop_end != 0 ? loop_end : frames.size());
        frames.insert(frames.erase(first, last), python.begin(), python.end());
    }
    it->second = out_.intern_stack(frames);
    return it->second;
}

}  // namespace memtrail::recorder::detail
