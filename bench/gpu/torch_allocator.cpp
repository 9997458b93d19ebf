#include "torch_allocator.hpp"

#include <c10/cuda/CUDACachingAllocator.h>
#include <torch/csrc/cuda/memory_snapshot.h>

#include <optional>
#include <string>

extern "C" {

void* memtrail_torch_allocate(size_t size) {
    return c10::cuda::CUDACachingAllocator::raw_alloc(size);
}

void memtrail_torch_free(void* pointer) {
    c10::cuda::CUDACachingAllocator::raw_delete(pointer);
}

void memtrail_torch_empty_cache() {
    c10::cuda::CUDACachingAllocator::emptyCache();
}

void memtrail_torch_record_history(int recording) {
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
}
