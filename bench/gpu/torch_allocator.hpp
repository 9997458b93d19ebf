#pragma once
// PyTorch's CUDA caching allocator, reached through libtorch the way C++ extensions reach it
// (c10::cuda::CUDACachingAllocator::raw_alloc / raw_delete), and its history recording
// (torch::cuda::_record_memory_history, what torch.cuda.memory._record_memory_history calls).
// torch_allocator.cpp builds into a small shared library against libtorch
// (libmemtrail_torch_allocator.so); the benchmark loads it at run time, so that the benchmark
// itself builds and runs without libtorch.

#include <cstddef>

extern "C" {

enum memtrail_torch_recording {
    memtrail_torch_recording_off = 0,
    memtrail_torch_recording_trace = 1,             // enabled "all", no context: no stacks
    memtrail_torch_recording_trace_cpp_stacks = 2,  // context "all", stacks "all": C++ frames
};

void* memtrail_torch_allocate(size_t size);
void memtrail_torch_free(void* pointer);
void memtrail_torch_empty_cache();
void memtrail_torch_record_history(int recording);
}
