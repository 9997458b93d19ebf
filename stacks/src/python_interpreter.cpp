#include "detail/python_interpreter.hpp"

#include <dlfcn.h>
#include <link.h>

namespace memtrail::recorder::detail {

namespace {

template <typename Function>
bool look_up(Function& out, const char* name) {
    out = reinterpret_cast<Function>(dlsym(RTLD_DEFAULT, name));
    return out != nullptr;
}

// The evaluation loop's extent, from its symbol's size (a return address inside it means the
// thread is running Python code).
void find_evaluation_loop(python_interpreter& api) {
    void* start = dlsym(RTLD_DEFAULT, "_PyEval_EvalFrameDefault");
    Dl_info info{};
    void* symbol_entry = nullptr;
    if (start == nullptr || dladdr1(start, &info, &symbol_entry, RTLD_DL_SYMENT) == 0 ||
        symbol_entry == nullptr) {
        return;
    }
    const auto* symbol = static_cast<const ElfW(Sym)*>(symbol_entry);
    if (symbol->st_size == 0) {
        return;
    }
    api.evaluation_loop_begin = reinterpret_cast<uintptr_t>(start);
    api.evaluation_loop_end = api.evaluation_loop_begin + symbol->st_size;
}

// All or nothing: a partial interpreter is no interpreter.
bool look_up_interpreter(python_interpreter& api) {
    look_up(api.frame_last_instruction, "PyFrame_GetLasti");
    if (!look_up(api.is_finalizing, "Py_IsFinalizing")) {
        look_up(api.is_finalizing, "_Py_IsFinalizing");
    }
    find_evaluation_loop(api);
    api.version = static_cast<const unsigned long*>(dlsym(RTLD_DEFAULT, "Py_Version"));
    api.code_type = dlsym(RTLD_DEFAULT, "PyCode_Type");
    if (!look_up(api.current_thread_state, "PyThreadState_GetUnchecked")) {
        look_up(api.current_thread_state, "_PyThreadState_UncheckedGet");
    }
    constexpr unsigned long python_3_12 = 0x030C;
    api.current_state_is_the_callers = api.current_thread_state != nullptr &&
                                       api.version != nullptr &&
                                       (*api.version >> 16) >= python_3_12;
    return look_up(api.is_initialized, "Py_IsInitialized") &&
           look_up(api.gil_check, "PyGILState_Check") &&
           look_up(api.this_thread_state, "PyGILState_GetThisThreadState") &&
           look_up(api.thread_state_frame, "PyThreadState_GetFrame") &&
           look_up(api.frame_back, "PyFrame_GetBack") &&
           look_up(api.frame_code, "PyFrame_GetCode") &&
           look_up(api.frame_line, "PyFrame_GetLineNumber") &&
           look_up(api.code_line_at, "PyCode_Addr2Line") &&
           look_up(api.get_attribute, "PyObject_GetAttrString") &&
           look_up(api.unicode_utf8, "PyUnicode_AsUTF8") &&
           look_up(api.increment_reference, "Py_IncRef") &&
           look_up(api.decrement_reference, "Py_DecRef") &&
           look_up(api.clear_error, "PyErr_Clear") &&
           look_up(api.gil_ensure, "PyGILState_Ensure") &&
           look_up(api.gil_release, "PyGILState_Release");
}

}  // namespace

python_interpreter::thread_state python_interpreter::state_holding_gil() const {
    if (is_initialized() == 0) {
        return nullptr;
    }
    if (current_state_is_the_callers) {
        return current_thread_state();
    }
    // PyGILState_Check answers 1 when the interpreter is not (or no longer) running, hence the
    // check above. Where the GIL holder's state can be read, it must be this thread's.
    if (gil_check() != 1) {
        return nullptr;
    }
    const thread_state mine = this_thread_state();
    return mine != nullptr && (current_thread_state == nullptr || current_thread_state() == mine)
               ? mine
               : nullptr;
}

bool python_interpreter::accepts_gil_requests() const {
    return is_initialized() != 0 && (is_finalizing == nullptr || is_finalizing() == 0);
}

const python_interpreter* find_python_interpreter() {
    static const python_interpreter* const found = [] {
        static python_interpreter api{};
        return look_up_interpreter(api) ? &api : nullptr;
    }();
    return found;
}

}  // namespace memtrail::recorder::detail
