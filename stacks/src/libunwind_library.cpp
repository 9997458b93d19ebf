// libunwind is opened with dlopen(RTLD_LOCAL) instead of being linked. Linking it would put its
// _Unwind_* functions (_Unwind_RaiseException, _Unwind_Resume, ...) and backtrace() into the
// program's global symbol scope, where they can interpose libgcc's and glibc's: the host
// program's C++ exceptions would then be thrown by one unwinder and resumed by another, which
// crashes. Debian's libunwind.a is built without -fPIC, so hiding a static copy inside
// librecorder.so with --exclude-libs is not possible either. RTLD_LOCAL keeps every libunwind
// symbol private to the handle; we only ever call unw_backtrace through a pointer.

#include "detail/libunwind_library.hpp"

#include <dlfcn.h>
// The local-only API (_UL* symbols): this process unwinds itself, never another one.
#define UNW_LOCAL_ONLY
#include <libunwind.h>

#include <array>
#include <mutex>
#include <stdexcept>
#include <string>

namespace memtrail::recorder::detail {

namespace {

// libunwind's API names are macros over architecture-specific symbols (unw_set_caching_policy
// is _ULx86_64_set_caching_policy on x86-64); stringizing the macro gives the real name.
#define MEMTRAIL_SYMBOL_NAME_2(x) #x
#define MEMTRAIL_SYMBOL_NAME(x) MEMTRAIL_SYMBOL_NAME_2(x)

using set_caching_policy_function = int (*)(unw_addr_space_t, unw_caching_policy_t);

template <typename Function>
Function find_symbol(void* handle, const char* name) {
    void* symbol = dlsym(handle, name);
    if (symbol == nullptr) {
        throw std::runtime_error(std::string("memtrail: libunwind lacks ") + name);
    }
    return reinterpret_cast<Function>(symbol);
}

unw_backtrace_function open_libunwind() {
    constexpr std::array<const char*, 2> names = {"libunwind.so.8", "libunwind.so"};
    void* handle = nullptr;
    std::string errors;
    for (const char* name : names) {
        handle = dlopen(name, RTLD_NOW | RTLD_LOCAL);
        if (handle != nullptr) {
            break;
        }
        errors += std::string(errors.empty() ? "" : "; ") + dlerror();
    }
    if (handle == nullptr) {
        throw std::runtime_error("memtrail: cannot load libunwind for native stacks: " + errors);
    }
    // Per-thread caches: recording threads do not contend on libunwind's global cache lock.
    auto set_caching_policy = find_symbol<set_caching_policy_function>(
        handle, MEMTRAIL_SYMBOL_NAME(unw_set_caching_policy));
    auto* local_address_space =
        find_symbol<unw_addr_space_t*>(handle, MEMTRAIL_SYMBOL_NAME(unw_local_addr_space));
    set_caching_policy(*local_address_space, UNW_CACHE_PER_THREAD);
    return find_symbol<unw_backtrace_function>(handle, "unw_backtrace");
}

}  // namespace

unw_backtrace_function load_unw_backtrace() {
    static std::once_flag once;
    static unw_backtrace_function function = nullptr;
    std::call_once(once, [] { function = open_libunwind(); });
    return function;
}

}  // namespace memtrail::recorder::detail
