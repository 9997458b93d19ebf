#pragma once
// Python frames in recorder stacks. A stack in the stack_table is its native return addresses,
// then python_frames_marker and a (code object, location) pair per Python frame, innermost
// first. Captured on the allocation path (cheap: no strings, no lines); named at dump time.

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "detail/python_interpreter.hpp"

namespace memtrail::recorder::detail {

// No return address is 0: the native part ends at the first 0.
inline constexpr uintptr_t python_frames_marker = 0;

// Writes the calling thread's Python frames into `out` as (code, location) pairs, innermost
// first, at most out.size() / 2 of them, and returns the number of words written. Writes
// nothing unless the thread holds the GIL; never takes it.
size_t capture_python_frames(const python_interpreter& python, std::span<uintptr_t> out);

// Keeps the code objects of `pairs` alive until the dump: called when a stack holding them is
// first interned, with the GIL still held.
void keep_python_code(const python_interpreter& python, std::span<const uintptr_t> pairs);

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
