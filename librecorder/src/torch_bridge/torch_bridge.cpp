// libmemtrail_torch_bridge.so: tells memtrail when PyTorch allocates to a private pool.
//
// torch 2.11's CUDAPluggableAllocator forwards beginAllocateToPool, endAllocateToPool and
// releasePool (what torch.cuda.graph and use_mem_pool call) to function objects that only C++
// can set (set_begin_allocate_to_pool, set_end_allocate_to_pool_fn, set_release_pool). After
// torch.cuda.memory.change_current_allocator(CUDAPluggableAllocator(librecorder, ...)), Python
// loads this library and calls memtrail_torch_bridge_install(): a graph capture then allocates
// into memtrail's private pool of the graph, and that memory serves nothing else until the graph
// is released, exactly as with PyTorch's own allocator.
//
// Built only against an installed libtorch (MEMTRAIL_TORCH_DIR; tests/gpu/run.sh builds it).

#include <c10/cuda/CUDACachingAllocator.h>
#include <torch/csrc/cuda/CUDAPluggableAllocator.h>

#include <cstdio>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <utility>

#include "memtrail/memtrail.h"

namespace {

using pluggable = torch::cuda::CUDAPluggableAllocator::CUDAPluggableAllocator;
using stream_filter = std::function<bool(cudaStream_t)>;

// PyTorch's filter of each pool being allocated to, kept alive until the pool ends: memtrail
// calls it, through filter_trampoline, on every allocation until then.
class filters {
  public:
    void* keep(int device, c10::cuda::MempoolId_t pool, stream_filter filter) {
        std::lock_guard lock(mutex_);
        auto& slot = kept_[{device, pool}];
        slot = std::make_unique<stream_filter>(std::move(filter));
        return slot.get();
    }
    void forget(int device, c10::cuda::MempoolId_t pool) {
        std::lock_guard lock(mutex_);
        kept_.erase({device, pool});
    }

  private:
    std::mutex mutex_;
    std::map<std::pair<int, c10::cuda::MempoolId_t>, std::unique_ptr<stream_filter>> kept_;
};

filters& kept_filters() {
    static filters instance;
    return instance;
}

int filter_trampoline(void* stream, void* filter) {
    return (*static_cast<stream_filter*>(filter))(static_cast<cudaStream_t>(stream)) ? 1 : 0;
}

// A failed memtrail call becomes PyTorch's own error, which Python shows with memtrail's text.
void check(int status, const char* call) {
    TORCH_CHECK(status == 0, "memtrail: ", call, " failed: ", memtrail_last_error());
}

void begin_allocate_to_pool(int device, c10::cuda::MempoolId_t pool, stream_filter filter) {
    void* kept = kept_filters().keep(device, pool, std::move(filter));
    const int status = memtrail_begin_allocate_to_pool_with_filter(device, pool.first, pool.second,
                                                                   filter_trampoline, kept);
    if (status != 0) {
        kept_filters().forget(device, pool);
    }
    check(status, "begin_allocate_to_pool");
}

void end_allocate_to_pool(int device, c10::cuda::MempoolId_t pool) {
    check(memtrail_end_allocate_to_pool(device, pool.first, pool.second), "end_allocate_to_pool");
    kept_filters().forget(device, pool);  // memtrail no longer calls it
}

void release_pool(int device, c10::cuda::MempoolId_t pool) {
    check(memtrail_release_pool(device, pool.first, pool.second), "release_pool");
}

// The other hooks Python cannot set either: torch.cuda.empty_cache,
// set_per_process_memory_fraction (recorded in memtrail's snapshots, for the OOM verdict) and
// Tensor.record_stream reach memtrail too.
void empty_cache() {
    check(memtrail_empty_cache(-1), "empty_cache");
}

void set_memory_fraction(double fraction, int device) {
    check(memtrail_set_memory_fraction(fraction, device), "set_memory_fraction");
}

void record_stream(void* pointer, cudaStream_t stream) {
    check(memtrail_record_stream(pointer, stream), "record_stream");
}

thread_local char install_error[512] = {};

}  // namespace

extern "C" {

// Sets the hooks of PyTorch's current allocator. Returns 0, or -1 when that allocator is
// not a CUDAPluggableAllocator (change_current_allocator was not called first), with the reason
// in memtrail_torch_bridge_error().
__attribute__((visibility("default"))) int memtrail_torch_bridge_install(void) {
    try {
        const auto current = torch::cuda::CUDAPluggableAllocator::getCurrentAllocator();
        auto* allocator = dynamic_cast<pluggable*>(current.get());
        if (allocator == nullptr) {
            std::snprintf(install_error, sizeof install_error,
                          "PyTorch's current CUDA allocator is not a CUDAPluggableAllocator: call "
                          "torch.cuda.memory.change_current_allocator with memtrail's first");
            return -1;
        }
        allocator->set_begin_allocate_to_pool(begin_allocate_to_pool);
        allocator->set_end_allocate_to_pool_fn(end_allocate_to_pool);
        allocator->set_release_pool(release_pool);
        allocator->set_reset_fn(empty_cache);
        allocator->set_memory_fraction_fn(set_memory_fraction);
        allocator->set_record_stream_fn(record_stream);
        return 0;
    } catch (const std::exception& error) {
        std::snprintf(install_error, sizeof install_error, "%s", error.what());
        return -1;
    }
}

__attribute__((visibility("default"))) const char* memtrail_torch_bridge_error(void) {
    return install_error;
}

}  // extern "C"
