#include "torch_allocator_loader.hpp"

#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

namespace memtrail::bench {

namespace {

std::string torch_library_path() {
    if (const char* path = std::getenv("MEMTRAIL_TORCH_ALLOCATOR")) {
        return path;
    }
    std::error_code error;
    const auto executable = std::filesystem::read_symlink("/proc/self/exe", error);
    return (executable.parent_path().parent_path() / "lib" / "libmemtrail_torch_allocator.so")
        .string();
}

const torch_functions* load(const char* program) {
    const std::string path = torch_library_path();
    void* library = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (library == nullptr) {
        std::fprintf(stderr, "%s: no PyTorch rows (%s)\n", program, dlerror());
        return nullptr;
    }
    static torch_functions f;
    f.allocate = reinterpret_cast<decltype(f.allocate)>(dlsym(library, "memtrail_torch_allocate"));
    f.free = reinterpret_cast<decltype(f.free)>(dlsym(library, "memtrail_torch_free"));
    f.empty_cache =
        reinterpret_cast<decltype(f.empty_cache)>(dlsym(library, "memtrail_torch_empty_cache"));
    f.record_history = reinterpret_cast<decltype(f.record_history)>(
        dlsym(library, "memtrail_torch_record_history"));
    if (!f.allocate || !f.free || !f.empty_cache || !f.record_history) {
        std::fprintf(stderr, "%s: %s lacks a memtrail_torch_ function\n", program, path.c_str());
        return nullptr;
    }
    return &f;
}

}  // namespace

const torch_functions* load_torch(const char* program) {
    static const torch_functions* const loaded = load(program);
    return loaded;
}

}  // namespace memtrail::bench
