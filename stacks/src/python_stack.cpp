#include "detail/python_stack.hpp"

#include <algorithm>
#include <cstdio>
#include <vector>

#include "detail/kept_python_code.hpp"

namespace memtrail::recorder::detail {

namespace {

// A location word: the instruction's byte offset (3.11 and later, resolved to a line at dump
// time), or, where PyFrame_GetLasti is missing, the line itself; the low bit tells which.
constexpr uintptr_t location_is_line = 1;

uintptr_t location_of(const python_interpreter& python, void* frame) {
    if (python.frame_last_instruction != nullptr) {
        return instruction_location(python.frame_last_instruction(frame));
    }
    const auto line = static_cast<uint32_t>(python.frame_line(frame));
    return (uintptr_t{line} << 1) | location_is_line;
}

// `thread`'s frames through the public API, read with the GIL held.
size_t capture_python_frames(const python_interpreter& python,
                             python_interpreter::thread_state thread, std::span<uintptr_t> out) {
    size_t written = 0;
    void* frame = python.thread_state_frame(thread);
    while (frame != nullptr && written + 2 <= out.size()) {
        void* code = python.frame_code(frame);
        out[written++] = reinterpret_cast<uintptr_t>(code);
        out[written++] = location_of(python, frame);
        // Borrowed from here on: the frame holds the code alive, and keep_code keeps it
        // once the stack is interned.
        python.decrement_reference(code);
        void* back = python.frame_back(frame);
        python.decrement_reference(frame);
        frame = back;
    }
    if (frame != nullptr) {
        python.decrement_reference(frame);
    }
    return written;
}

std::string describe_frames(std::span<const uintptr_t> pairs) {
    std::string text;
    for (size_t i = 0; i + 1 < pairs.size(); i += 2) {
        char pair[64];
        std::snprintf(pair, sizeof pair, " %#zx@%zu", static_cast<size_t>(pairs[i]),
                      static_cast<size_t>(pairs[i + 1] >> 1));
        text += pair;
    }
    return text;
}

// Per thread: false once a capture that took the GIL back found no Python code running.
thread_local bool may_run_python_code = true;

bool shows_evaluation_loop(const python_interpreter& python,
                           std::span<const uintptr_t> native_frames) {
    return std::any_of(native_frames.begin(), native_frames.end(),
                       [&](uintptr_t address) { return python.in_evaluation_loop(address); });
}

}  // namespace

python_capture::python_capture(const python_interpreter& python,
                               std::span<const uintptr_t> native_frames)
    : python_(python) {
    python_frame_reader* reader = python_frame_reader::find(python);
    if (reader != nullptr && python.accepts_gil_requests()) {
        // Read directly, the thread needs its own state only, held GIL or not: not asked before
        // 3.12 (PyGILState_Check would read the GIL holder's word on every capture, a line that
        // each switch of the GIL writes), and from 3.12 told by the thread-local state alone.
        // A thread holding the GIL that takes it again to keep a code object only nests it.
        const python_interpreter::thread_state holding =
            python.current_state_is_the_callers ? python.current_thread_state() : nullptr;
        gil_held_ = holding != nullptr;
        thread_ = gil_held_ ? holding : python.this_thread_state();
        reader_ = thread_ != nullptr ? reader : nullptr;
        return;
    }
    if (const python_interpreter::thread_state holding = python.state_holding_gil()) {
        gil_held_ = true;
        thread_ = holding;
        reader_ = reader;
        return;
    }
    if (!python.accepts_gil_requests()) {
        return;
    }
    thread_ = python.this_thread_state();
    if (thread_ == nullptr) {
        return;
    }
    if (!may_run_python_code && !shows_evaluation_loop(python, native_frames)) {
        thread_ = nullptr;
        return;
    }
    borrow_gil();
}

python_capture::~python_capture() {
    if (borrowed_) {
        python_.gil_release(gil_state_);
    }
}

bool python_capture::borrow_gil() {
    if (gil_held_) {
        return true;
    }
    if (!python_.accepts_gil_requests()) {
        return false;
    }
    gil_state_ = python_.gil_ensure();
    gil_held_ = borrowed_ = true;
    return true;
}

void python_capture::keep_code(std::span<const uintptr_t> pairs) {
    for (size_t i = 0; i + 1 < pairs.size(); i += 2) {
        // Only frames() that held the GIL (or took it) can have left code objects not kept yet,
        // and every one is added under the GIL: the check and the add cannot race.
        if (!is_kept_python_code(pairs[i]) && gil_held_) {
            python_.increment_reference(reinterpret_cast<void*>(pairs[i]));
            add_kept_python_code(pairs[i]);
        }
    }
}

size_t python_capture::frames(std::span<uintptr_t> out) {
    if (out.size() < 2 || thread_ == nullptr) {
        return 0;
    }
    if (reader_ != nullptr) {
        return frames_read_directly(out);
    }
    if (!gil_held_) {
        return 0;
    }
    const size_t written = capture_python_frames(python_, thread_, out);
    if (borrowed_) {
        may_run_python_code = written != 0;
    }
    return written;
}

std::optional<size_t> python_capture::frames_unchecked(std::span<uintptr_t> out) {
    if (out.size() < 2 || thread_ == nullptr || reader_ == nullptr || reader_->verifies()) {
        return std::nullopt;
    }
    return reader_->read_for_lookup(thread_, out);
}

size_t python_capture::frames_read_directly(std::span<uintptr_t> out) {
    const std::optional<size_t> read = reader_->read(thread_, out);
    if (read.has_value() && all_python_code_kept(out.first(*read)) && !reader_->verifies()) {
        return *read;
    }
    // Code objects not kept yet are kept under the GIL (keep_code); holding it, the public API
    // reads the same frames, and any difference turns the direct reader off.
    if (!borrow_gil()) {
        return 0;
    }
    thread_local std::vector<uintptr_t> from_api;
    from_api.resize(out.size());
    const size_t written = capture_python_frames(python_, thread_, from_api);
    const std::span<const uintptr_t> expected(from_api.data(), written);
    if (!read.has_value()) {
        reader_->give_up("a direct read failed a check; the public API read" +
                         describe_frames(expected));
    } else if (!std::ranges::equal(out.first(*read), expected)) {
        reader_->give_up("the direct read" + describe_frames(out.first(*read)) +
                         " differs from the public API's" + describe_frames(expected));
    } else {
        return written;
    }
    reader_ = nullptr;
    std::ranges::copy(expected, out.begin());
    return written;
}

python_symbolizer::python_symbolizer() : python_(find_python_interpreter()) {
    if (python_ != nullptr && python_->is_initialized() == 0) {
        python_ = nullptr;
    }
    if (python_ != nullptr) {
        gil_state_ = python_->gil_ensure();
    }
}

python_symbolizer::~python_symbolizer() {
    if (python_ != nullptr) {
        python_->gil_release(gil_state_);
    }
}

std::string python_symbolizer::text_attribute(void* object, const char* name) const {
    void* value = python_->get_attribute(object, name);
    if (value == nullptr) {
        python_->clear_error();
        return {};
    }
    const char* text = python_->unicode_utf8(value);
    std::string result = text != nullptr ? text : "";
    if (text == nullptr) {
        python_->clear_error();
    }
    python_->decrement_reference(value);
    return result;
}

python_frame python_symbolizer::symbolize(uintptr_t code, uintptr_t location) const {
    python_frame frame;
    if (python_ == nullptr) {
        return frame;
    }
    void* code_object = reinterpret_cast<void*>(code);
    frame.function = text_attribute(code_object, "co_name");
    frame.filename = text_attribute(code_object, "co_filename");
    const auto value = static_cast<int>(static_cast<uint32_t>(location >> 1));
    const int line =
        (location & location_is_line) != 0 ? value : python_->code_line_at(code_object, value);
    frame.line = line > 0 ? static_cast<uint32_t>(line) : 0;
    return frame;
}

}  // namespace memtrail::recorder::detail
