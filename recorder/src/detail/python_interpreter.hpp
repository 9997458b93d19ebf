#pragma once
// The few CPython functions memtrail calls, found at run time in the process (memtrail never
// links libpython: outside Python they are simply absent). Only functions that CPython 3.9 to
// 3.13 all export, except those marked optional.

#include <cstdint>

namespace memtrail::recorder::detail {

struct python_interpreter {
    using object = void*;  // PyObject*, PyFrameObject*, PyCodeObject*
    using thread_state = void*;

    int (*is_initialized)();
    int (*gil_check)();
    thread_state (*this_thread_state)();
    object (*thread_state_frame)(thread_state);  // new reference
    object (*frame_back)(object);                // new reference
    object (*frame_code)(object);                // new reference
    int (*frame_last_instruction)(object);       // optional: 3.11 and later
    int (*frame_line)(object);
    int (*code_line_at)(object, int);  // PyCode_Addr2Line: byte offset to line
    object (*get_attribute)(object, const char*);
    const char* (*unicode_utf8)(object);
    void (*increment_reference)(object);
    void (*decrement_reference)(object);
    void (*clear_error)();
    int (*gil_ensure)();  // PyGILState_STATE is an int-sized enum
    void (*gil_release)(int);
    thread_state (*current_thread_state)();  // optional: the GIL holder's state, unchecked
    int (*is_finalizing)();                  // optional: Py_IsFinalizing or _Py_IsFinalizing
    const unsigned long* version;            // optional: Py_Version (3.11 and later)
    const void* code_type;                   // optional: &PyCode_Type

    // The evaluation loop's code (_PyEval_EvalFrameDefault), where the symbol table tells;
    // both 0 otherwise.
    uintptr_t evaluation_loop_begin = 0;
    uintptr_t evaluation_loop_end = 0;

    // True when the calling thread holds the GIL of a running interpreter.
    bool holds_gil() const;

    // True when the interpreter runs and is not shutting down: only then may a thread that
    // released the GIL take it back (during finalization PyGILState_Ensure never returns).
    bool accepts_gil_requests() const;

    // True when `return_address` lies in the evaluation loop: the thread is running Python code.
    bool in_evaluation_loop(uintptr_t return_address) const {
        return return_address > evaluation_loop_begin && return_address <= evaluation_loop_end;
    }
};

// The interpreter of this process, or nullptr when no Python is loaded (or it lacks a function
// memtrail needs). Looked up on the first call; thread-safe.
const python_interpreter* find_python_interpreter();

}  // namespace memtrail::recorder::detail
