#include "detail/real_symbols.hpp"

#include <dlfcn.h>
#include <link.h>

#include <cstring>
#include <string_view>

#include "memtrail/memtrail.h"

namespace memtrail::interpose {

namespace {

using dlsym_function = void* (*)(void*, const char*);

// The interposer defines dlsym itself, so glibc's is found by version (2.34 moved it into libc).
dlsym_function glibc_dlsym() {
    static const dlsym_function found = [] {
        void* f = dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34");
        if (f == nullptr) {
            f = dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.2.5");
        }
        return reinterpret_cast<dlsym_function>(f);
    }();
    return found;
}

// A loaded library whose file name starts with `prefix` ("libcudart.so"), opened again (no load)
// for dlsym: a runtime that Python loaded with RTLD_LOCAL (PyTorch's) is not in the global scope.
void* loaded_library(const char* prefix) {
    struct search {
        std::string_view prefix;
        const char* path = nullptr;
    } wanted{prefix};
    dl_iterate_phdr(
        [](dl_phdr_info* info, size_t, void* data) {
            auto* s = static_cast<search*>(data);
            const char* slash = std::strrchr(info->dlpi_name, '/');
            const std::string_view file = slash != nullptr ? slash + 1 : info->dlpi_name;
            if (file.starts_with(s->prefix)) {
                s->path = info->dlpi_name;
                return 1;
            }
            return 0;
        },
        &wanted);
    return wanted.path != nullptr ? dlopen(wanted.path, RTLD_LAZY | RTLD_NOLOAD) : nullptr;
}

const void* library_base(const void* code) {
    Dl_info info{};
    return dladdr(code, &info) != 0 ? info.dli_fbase : nullptr;
}

}  // namespace

void* real_dlsym(void* handle, const char* name) {
    const dlsym_function f = glibc_dlsym();
    return f != nullptr ? f(handle, name) : nullptr;
}

void* real_runtime_symbol(const char* name) {
    if (void* f = real_dlsym(RTLD_NEXT, name)) {
        return f;
    }
    void* runtime = loaded_library("libcudart.so");
    return runtime != nullptr ? real_dlsym(runtime, name) : nullptr;
}

void* real_driver_symbol(const char* name) {
    // Never loads the driver itself: a program that has not loaded it has no use for it.
    void* driver = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
    return driver != nullptr ? real_dlsym(driver, name) : nullptr;
}

bool is_memtrail_code(const void* code) {
    static const void* const interposer = library_base(reinterpret_cast<const void*>(&real_dlsym));
    static const void* const recorder =
        library_base(reinterpret_cast<const void*>(&memtrail_malloc));
    const void* base = library_base(code);
    return base != nullptr && (base == interposer || base == recorder);
}

}  // namespace memtrail::interpose
