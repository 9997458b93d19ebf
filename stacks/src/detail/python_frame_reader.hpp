#pragma once
// The calling thread's Python frames read straight from CPython's own structures, without the
// GIL: a thread that is in native code cannot change its own frame chain, and no other thread
// pops its frames. The public API (PyThreadState_GetFrame, PyFrame_GetBack) needs the GIL and
// makes a frame object for every frame that lacks one; this reads three fields per frame.
//
// The structures are private and change with each minor version: only CPython 3.11 and 3.12 are
// read directly, after checking the code object's layout against PyCode_Type, and every read is
// checked (code objects by their type, pointers by their alignment, offsets by the code's size).
// A read that fails a check answers nothing, and the caller uses the public API under the GIL.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "detail/python_interpreter.hpp"
#include "memtrail/stacks/python_frames.hpp"

namespace memtrail::recorder::detail {

// A frame's location word for an instruction at `byte_offset` (PyFrame_GetLasti's value; -1 when
// none): the offset, resolved to a line at dump time. The low bit is 0; 1 marks a line.
constexpr uintptr_t instruction_location(int byte_offset) {
    return uintptr_t{static_cast<uint32_t>(byte_offset)} << 1;
}

// Where each field sits, in bytes, in one CPython minor version.
struct python_frame_layout {
    size_t thread_cframe;         // PyThreadState::cframe
    size_t cframe_current;        // _PyCFrame::current_frame
    size_t frame_code;            // _PyInterpreterFrame::f_code
    size_t frame_previous;        // _PyInterpreterFrame::previous
    size_t frame_instruction;     // _PyInterpreterFrame::prev_instr
    size_t frame_owner;           // _PyInterpreterFrame::owner (a char)
    unsigned char owner_last;     // the highest owner value of the version's enum
    size_t code_instructions;     // PyCodeObject::co_code_adaptive, PyCode_Type's tp_basicsize
    size_t code_first_traceable;  // PyCodeObject::_co_firsttraceable
};

class python_frame_reader {
  public:
    // The reader of this process's interpreter, or nullptr: an unknown version or layout,
    // MEMTRAIL_PYTHON_FRAMES=api, or a read that failed a check earlier.
    static python_frame_reader* find(const python_interpreter& python);

    // Writes `thread`'s frames (the calling thread's own state) into `out` as (code, location)
    // pairs as python_capture::frames does, skipping the frames the public API skips; nullopt
    // when something read does not look like CPython's structures.
    std::optional<size_t> read(const void* thread, std::span<uintptr_t> out) const;

    // The same words as read() from the frames alone, for looking up a stack interned before:
    // the code objects are not read (their type, size and first traceable instruction, two lines
    // of each that PyTorch's work between two allocations has evicted, for every frame). A stack
    // is interned only from read()'s words, with its code objects kept (kept_python_code), so
    // words that match one name those frames; a frame read() skips as incomplete is kept here,
    // and its words then match no stack. nullopt when a frame does not look like CPython's.
    std::optional<size_t> read_for_lookup(const void* thread, std::span<uintptr_t> out) const;

    bool verifies() const { return source_ == python_frames_source::verify; }

    // After a failed check: every later capture uses the public API. Under verify, stops the
    // process instead, naming `what`.
    void give_up(const std::string& what);

    python_frame_reader(const python_frame_layout& layout, uintptr_t code_type,
                        python_frames_source source)
        : layout_(layout), code_type_(code_type), source_(source) {}

  private:
    python_frame_layout layout_;
    uintptr_t code_type_;
    python_frames_source source_;
    std::atomic<bool> usable_{true};
};

}  // namespace memtrail::recorder::detail
