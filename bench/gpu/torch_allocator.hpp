#pragma once
// PyTorch's CUDA caching allocator, reached through libtorch the way C++ extensions reach it
// (c10::cuda::CUDACachingAllocator::raw_alloc / raw_delete), and its history recording
// (torch::cuda::_record_memory_history, what torch.cuda.memory._record_memory_history calls).
// Kept behind this header so that only torch_allocator.cpp needs libtorch's headers.

#include <cstddef>
#include <string>

namespace memtrail::bench {

void* torch_allocate(size_t size);
void torch_free(void* pointer);
void torch_empty_cache();

enum class torch_recording {
    off,
    trace,            // enabled "all", no context: every event, no stacks
    trace_cpp_stacks  // enabled "all", context "all", stacks "all" (C++ frames: no Python here)
};
void torch_record_history(torch_recording recording);

}  // namespace memtrail::bench
