#include "detail/python_stack.hpp"

#include <algorithm>

namespace memtrail::recorder::detail {

namespace {

// A location word: the instruction's byte offset (3.11 and later, resolved to a line at dump
// time), or, where PyFrame_GetLasti is missing, the line itself; the low bit tells which.
constexpr uintptr_t location_is_line = 1;

uintptr_t location_of(const python_interpreter& python, void* frame) {
    if (python.frame_last_instruction != nullptr) {
        const auto offset = static_cast<uint32_t>(python.frame_last_instruction(frame));
        return uintptr_t{offset} << 1;
    }
    const auto line = static_cast<uint32_t>(python.frame_line(frame));
    return (uintptr_t{line} << 1) | location_is_line;
}

// The thread's frames, read with the GIL held.
size_t capture_python_frames(const python_interpreter& python, std::span<uintptr_t> out) {
    const python_interpreter::thread_state thread = python.current_thread_state != nullptr
                                                        ? python.current_thread_state()
                                                        : python.this_thread_state();
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

void keep_python_code(const python_interpreter& python, std::span<const uintptr_t> pairs) {
    for (size_t i = 0; i + 1 < pairs.size(); i += 2) {
        python.increment_reference(reinterpret_cast<void*>(pairs[i]));
    }
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
    if (python.holds_gil()) {
        gil_held_ = true;
        return;
    }
    if (!python.accepts_gil_requests() || python.this_thread_state() == nullptr) {
        return;
    }
    if (!may_run_python_code && !shows_evaluation_loop(python, native_frames)) {
        return;
    }
    gil_state_ = python.gil_ensure();
    gil_held_ = borrowed_ = true;
}

python_capture::~python_capture() {
    if (borrowed_) {
        python_.gil_release(gil_state_);
    }
}

void python_capture::keep_code(std::span<const uintptr_t> pairs) {
    keep_python_code(python_, pairs);
}

size_t python_capture::frames(std::span<uintptr_t> out) {
    if (out.size() < 2 || !gil_held_) {
        return 0;
    }
    const size_t written = capture_python_frames(python_, out);
    if (borrowed_) {
        may_run_python_code = written != 0;
    }
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
