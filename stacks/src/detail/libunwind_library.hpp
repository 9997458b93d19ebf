#pragma once
// libunwind, loaded privately (see libunwind_library.cpp for why it is not linked).

namespace memtrail::recorder::detail {

using unw_backtrace_function = int (*)(void** buffer, int size);

// libunwind's unw_backtrace, loading the library on first call. Throws std::runtime_error with
// dlerror's message when libunwind cannot be loaded. Thread-safe.
unw_backtrace_function load_unw_backtrace();

}  // namespace memtrail::recorder::detail
