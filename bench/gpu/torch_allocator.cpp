#include "torch_allocator.hpp"

#include <c10/cuda/CUDACachingAllocator.h>
#include <torch/csrc/cuda/memory_snapshot.h>

#include <optional>

namespace memtrail::bench {

void* torch_allocate(size_t size) {
    return c10::cuda::CUDACachingAllocator::raw_alloc(size);
}

void torch_free(void* pointer) {
    c10::cuda::CUDACachingAllocator::raw_delete(pointer);
}

void torch_empty_cache() {
    c10::cuda::CUDACachingAllocator::emptyCache();
}

void torch_record_history(torch_recording recording) {
    using text = std::optional<std::string>;
    // The ring keeps the last million entries, like memtrail's default.
    constexpr size_t max_entries = 1'000'000;
    switch (recording) {
        case torch_recording::off:
            torch::cuda::_record_memory_history(text{}, text{}, "all", max_entries);
            break;
        case torch_recording::trace:
            torch::cuda::_record_memory_history(text{"all"}, text{}, "all", max_entries);
            break;
        case torch_recording::trace_cpp_stacks:
            torch::cuda::_record_memory_history(text{"all"}, text{"all"}, "all", max_entries);
            break;
    }
}

}  // namespace memtrail::bench
