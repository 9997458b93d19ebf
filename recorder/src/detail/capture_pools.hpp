#pragma once
// Allocations made during a CUDA graph capture that nobody announced (PyTorch's plain
// CUDAPluggableAllocator does not tell its allocator when a capture begins): each such capture
// gets a private pool of its own, (capture id, 0), allocated to while the capture lasts and never
// released. A graph replays the addresses it captured, so memory it used must never serve
// anything else: keeping the pool forever is what makes that safe, at the cost that a graph's
// memory stays reserved until the process ends, even after the graph is gone.

#include <atomic>
#include <mutex>
#include <vector>

#include "memtrail/core/caching_allocator.hpp"

namespace memtrail::recorder::detail {

class capture_pools {
  public:
    explicit capture_pools(device_allocator& allocator)
        : allocator_(allocator), device_(allocator.get_device()) {}

    // Called before every allocation on `stream`, and every free of a block of `stream`: ends the
    // pools of captures that have finished and, when `stream` is capturing and no pool being
    // allocated to takes it, begins allocating to that capture's pool (so that a free at the
    // start of a capture already waits, as frees during a capture must). Inline, one load and one
    // device query when no capture is under way: it is on every allocation's path.
    void prepare(stream_handle stream) {
        if (underway_count_.load(std::memory_order_acquire) == 0 &&
            device_.stream_capture_id(stream) == 0) [[likely]] {
            return;
        }
        prepare_capturing(stream);
    }

  private:
    struct capture_underway {
        uint64_t capture = 0;
        stream_handle stream = 0;  // a stream of the capture, asked whether it still captures
    };

    void prepare_capturing(stream_handle stream);
    void end_finished_locked();

    device_allocator& allocator_;
    device& device_;
    std::mutex mutex_;
    std::vector<capture_underway> underway_;
    std::atomic<size_t> underway_count_{0};
};

}  // namespace memtrail::recorder::detail
