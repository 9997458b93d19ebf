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
    // Called before every allocation on `stream`, and every free of a block of `stream`: ends the
    // pools of captures that have finished and, when `stream` is capturing and no pool being
    // allocated to takes it, begins allocating to that capture's pool (so that a free at the
    // start of a capture already waits, as frees during a capture must). One device query when
    // no capture is under way.
    void prepare(device_allocator& allocator, stream_handle stream);

  private:
    struct capture_underway {
        uint64_t capture = 0;
        stream_handle stream = 0;  // a stream of the capture, asked whether it still captures
    };

    void end_finished_locked(device_allocator& allocator);

    std::mutex mutex_;
    std::vector<capture_underway> underway_;
    std::atomic<size_t> underway_count_{0};
};

}  // namespace memtrail::recorder::detail
