#include "torch_allocator.hpp"

#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAFunctions.h>
#include <torch/csrc/cuda/memory_snapshot.h>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <optional>
#include <string>

namespace {

// torch's Python module initializes the allocator when CUDA first starts; a C++ program does it
// itself, once, before the first call.
void initialize_once() {
    static const bool initialized = [] {
        c10::cuda::CUDACachingAllocator::init(c10::cuda::device_count());
        return true;
    }();
    (void)initialized;
}

// c10 reports failures as exceptions, which must not cross into the C caller.
template <typename Function>
auto guarded(const char* what, Function function) noexcept {
    try {
        initialize_once();
        return function();
    } catch (const std::exception& e) {
        std::fprintf(stderr, "libmemtrail_torch_allocator: %s: %s\n", what, e.what());
        std::abort();
    }
}

void record_history(int recording) {
    using text = std::optional<std::string>;
    // The ring keeps the last million entries, like memtrail's default.
    constexpr size_t max_entries = 1'000'000;
    switch (recording) {
        case memtrail_torch_recording_trace:
            torch::cuda::_record_memory_history(text{"all"}, text{}, "all", max_entries);
            break;
        case memtrail_torch_recording_trace_cpp_stacks:
            torch::cuda::_record_memory_history(text{"all"}, text{"all"}, "all", max_entries);
            break;
        default:
            torch::cuda::_record_memory_history(text{}, text{}, "all", max_entries);
            break;
    }
}

}  // namespace

extern "C" {

void* memtrail_torch_allocate(size_t size) {
    return guarded("raw_alloc", [&] { return c10::cuda::CUDACachingAllocator::raw_alloc(size); });
}

void memtrail_torch_free(void* pointer) {
    guarded("raw_delete", [&] { c10::cuda::CUDACachingAllocator::raw_delete(pointer); });
}

void memtrail_torch_empty_cache() {
    guarded("emptyCache", [] { c10::cuda::CUDACachingAllocator::emptyCache(); });
}

void memtrail_torch_record_history(int recording) {
    guarded("_record_memory_history", [&] { record_history(recording); });
}
}
