#pragma once
// Python frames in recorder stacks. A stack in the stack_table is its native return addresses,
// then python_frames_marker and a (code object, location) pair per Python frame, innermost
// first. Captured on the allocation path (cheap: no strings, no lines); named at dump time.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "detail/python_frame_reader.hpp"
#include "detail/python_interpreter.hpp"

namespace memtrail::recorder::detail {

// No return address is 0: the native part ends at the first 0.
inline constexpr uintptr_t python_frames_marker = 0;

// One capture of the calling thread's Python frames. Made before any memtrail lock is taken, so
// waiting for the GIL never waits on memtrail.
//
// Where the interpreter's frames can be read directly (python_frame_reader: CPython 3.11 and
// 3.12), the thread reads its own frames without the GIL, and takes the GIL only when a frame's
// code object is not kept yet (kept_python_code), to keep it; the public API then reads the same
// frames again, and a difference turns the direct reader off for good.
//
// Otherwise the public API reads them under the GIL: a thread that holds it is captured as it
// is; a thread that has a Python thread state but released the GIL around a call into native
// code (PyTorch's bindings release it around every operator) takes it back for the capture, as
// PyTorch's own recorder does, and gives it back at once. A thread whose capture found no Python
// frames (autograd's workers: a thread state but no Python code running) is not asked again
// unless its native stack shows the evaluation loop, so it never waits for the GIL. Threads
// without a thread state, and a process shutting its interpreter down, keep native frames only.
class python_capture {
  public:
    python_capture(const python_interpreter& python, std::span<const uintptr_t> native_frames);
    ~python_capture();
    python_capture(const python_capture&) = delete;
    python_capture& operator=(const python_capture&) = delete;

    // Writes the thread's Python frames into `out` as (code, location) pairs, innermost first,
    // at most out.size() / 2 of them, and returns the number of words written.
    size_t frames(std::span<uintptr_t> out);

    // The frames as the direct reader finds them, from the frames alone (their code objects are
    // neither read nor checked to be kept: python_frame_reader::read_for_lookup): only to find a
    // stack interned before, whose code objects are all kept (frames() then reads and checks a
    // stack not found). nullopt where frames are not read directly, or every read is verified.
    std::optional<size_t> frames_unchecked(std::span<uintptr_t> out);

    // Keeps the code objects of `pairs` (from frames()) alive until the dump: called when a
    // stack holding them is first interned.
    void keep_code(std::span<const uintptr_t> pairs);

  private:
    bool borrow_gil();
    size_t frames_read_directly(std::span<uintptr_t> out);

    const python_interpreter& python_;
    python_frame_reader* reader_ = nullptr;  // set: this thread's frames are read directly
    python_interpreter::thread_state thread_ = nullptr;
    bool gil_held_ = false;  // by this thread, so frames can be read
    bool borrowed_ = false;  // taken for this capture: given back by the destructor
    int gil_state_ = 0;
};

struct python_frame {
    std::string function;  // the code object's co_name; empty when unresolved
    std::string filename;
    uint32_t line = 0;  // 0: unknown
};

// Names captured frames, holding the GIL from construction to destruction (PyGILState_Ensure:
// whether or not the thread held it already). When no interpreter runs any more, every frame
// stays unresolved.
class python_symbolizer {
  public:
    python_symbolizer();
    ~python_symbolizer();
    python_symbolizer(const python_symbolizer&) = delete;
    python_symbolizer& operator=(const python_symbolizer&) = delete;

    python_frame symbolize(uintptr_t code, uintptr_t location) const;

  private:
    std::string text_attribute(void* object, const char* name) const;

    const python_interpreter* python_;  // nullptr: nothing resolves
    int gil_state_ = 0;
};

}  // namespace memtrail::recorder::detail
