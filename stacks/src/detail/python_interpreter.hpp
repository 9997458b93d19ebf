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
    // From 3.12 the current thread state is a thread-local, set while the calling thread holds
    // the GIL: current_thread_state() then answers for the calling thread alone.
    bool current_state_is_the_callers = false;
    int (*is_finalizing)();        // optional: Py_IsFinalizing or _Py_IsFinalizing
    const unsigned long* version;  // optional: Py_Version (3.11 and later)
    const void* code_type;         // optional: &PyCode_Type

    // The evaluation loop's code (_PyEval_EvalFrameDefault), where the symbol table tells;
    // both 0 otherwise.
    uintptr_t evaluation_loop_begin = 0;
    uintptr_t evaluation_loop_end = 0;

    // The calling thread's state when it holds the GIL of a running interpreter; nullptr
    // otherwise. Asked on every capture: two calls into Python from 3.12 on, four before.
    thread_state state_holding_gil() const;

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
