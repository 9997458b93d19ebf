#include "memtrail/analysis/baselines.hpp"

#include <algorithm>
#include <bit>
#include <map>
#include <set>
#include <unordered_map>
#include <vector>

namespace memtrail::analysis {
namespace {

using snapshot::action;

constexpr uint64_t min_block = 512;

// Calls alloc(address, request, entry) and release(address) in trace order, starting with the
// blocks live before the trace (entry = none).
template <typename Alloc, typename Release>
void walk_requests(const device_model& model, Alloc&& alloc, Release&& release) {
    for (const auto& seg : model.state_after(0).segments) {
        for (const auto& blk : seg.blocks) {
            if (blk.state != snapshot::block_state::inactive) {
                alloc(blk.address, std::max(blk.requested_size, uint64_t{1}), std::nullopt);
            }
        }
    }
    for (size_t i = 0; i < model.event_count(); ++i) {
        const snapshot::trace_entry& e = model.entry(i);
        if (e.kind == action::alloc) {
            alloc(e.address, e.requested_size != 0 ? e.requested_size : e.size,
                  std::optional<size_t>(i));
        } else if (e.kind == action::free_completed) {
            release(e.address);
        }
    }
}

class buddy_heap {
  public:
    buddy_heap(uint64_t capacity, uint64_t arena_size)
        : capacity_(capacity), arena_size_(std::bit_ceil(std::max(arena_size, min_block))) {}

    // The block's global offset, or nullopt when the capacity is exhausted.
    std::optional<uint64_t> allocate(uint64_t request) {
        const uint64_t size = std::bit_ceil(std::max(request, min_block));
        auto free_block = take_free(size);
        if (!free_block) {
            const uint64_t arena = std::max(size, arena_size_);
            if (capacity_ != 0 && reserved_ + arena > capacity_) {
                return std::nullopt;
            }
            const uint64_t base = next_base_;
            next_base_ += arena;
            reserved_ += arena;
            ++arenas_;
            arena_of_[base] = arena;
            free_[arena].insert(base);
            free_bytes_ += arena;
            free_block = take_free(size);
        }
        allocated_ += size;
        return free_block;
    }

    void release(uint64_t offset, uint64_t request) {
        uint64_t size = std::bit_ceil(std::max(request, min_block));
        allocated_ -= size;
        free_bytes_ += size;
        // The arena this block lives in bounds the merging.
        auto arena = std::prev(arena_of_.upper_bound(offset));
        const uint64_t base = arena->first;
        while (size < arena->second) {
            const uint64_t buddy = base + ((offset - base) ^ size);
            auto& same = free_[size];
            auto it = same.find(buddy);
            if (it == same.end()) {
                break;
            }
            same.erase(it);
            offset = std::min(offset, buddy);
            size *= 2;
        }
        free_[size].insert(offset);
    }

    uint64_t reserved() const { return reserved_; }
    uint64_t allocated() const { return allocated_; }
    uint64_t arenas() const { return arenas_; }
    double fragmentation() const {
        uint64_t largest = 0;
        for (const auto& [size, offsets] : free_) {
            if (!offsets.empty()) {
                largest = std::max(largest, size);
            }
        }
        return free_bytes_ == 0
                   ? 0.0
                   : 1.0 - static_cast<double>(largest) / static_cast<double>(free_bytes_);
    }

  private:
    std::optional<uint64_t> take_free(uint64_t size) {
        auto it = free_.lower_bound(size);
        while (it != free_.end() && it->second.empty()) {
            ++it;
        }
        if (it == free_.end()) {
            return std::nullopt;
        }
        uint64_t block_size = it->first;
        const uint64_t offset = *it->second.begin();
        it->second.erase(it->second.begin());
        // Split down, keeping the upper halves free.
        while (block_size > size) {
            block_size /= 2;
            free_[block_size].insert(offset + block_size);
        }
        free_bytes_ -= size;
        return offset;
    }

    uint64_t capacity_;
    uint64_t arena_size_;
    uint64_t next_base_ = 0;
    uint64_t reserved_ = 0;
    uint64_t allocated_ = 0;
    uint64_t free_bytes_ = 0;
    uint64_t arenas_ = 0;
    std::map<uint64_t, uint64_t> arena_of_;        // base -> size
    std::map<uint64_t, std::set<uint64_t>> free_;  // block size -> offsets
};

}  // namespace

policy_outcome simulate_cuda_malloc(const device_model& model, uint64_t capacity) {
    policy_outcome outcome;
    outcome.name = "cudaMalloc per allocation";
    std::unordered_map<uint64_t, uint64_t> live;  // trace address -> bytes held
    uint64_t reserved = 0;
    walk_requests(
        model,
        [&](uint64_t address, uint64_t request, std::optional<size_t> entry) {
            const uint64_t size = (request + min_block - 1) / min_block * min_block;
            if (capacity != 0 && reserved + size > capacity) {
                ++outcome.failed_allocations;
                if (!outcome.first_failure && entry) {
                    outcome.first_failure = entry;
                }
                return;
            }
            live[address] = size;
            reserved += size;
            ++outcome.device_allocations;
            if (reserved > outcome.peak_reserved) {
                outcome.peak_reserved = outcome.peak_allocated = reserved;
            }
        },
        [&](uint64_t address) {
            const auto it = live.find(address);
            if (it != live.end()) {
                reserved -= it->second;
                live.erase(it);
            }
        });
    return outcome;
}

policy_outcome simulate_buddy(const device_model& model, uint64_t capacity, uint64_t arena_size) {
    policy_outcome outcome;
    outcome.name = "power-of-two buddy";
    buddy_heap heap(capacity, arena_size);
    struct held {
        uint64_t offset;
        uint64_t request;
    };
    std::unordered_map<uint64_t, held> live;
    walk_requests(
        model,
        [&](uint64_t address, uint64_t request, std::optional<size_t> entry) {
            const auto offset = heap.allocate(request);
            if (!offset) {
                ++outcome.failed_allocations;
                if (!outcome.first_failure && entry) {
                    outcome.first_failure = entry;
                }
                return;
            }
            live[address] = held{*offset, request};
            if (heap.allocated() > outcome.peak_allocated) {
                outcome.peak_allocated = heap.allocated();
                outcome.fragmentation = heap.fragmentation();
            }
            outcome.peak_reserved = std::max(outcome.peak_reserved, heap.reserved());
        },
        [&](uint64_t address) {
            const auto it = live.find(address);
            if (it != live.end()) {
                heap.release(it->second.offset, it->second.request);
                live.erase(it);
            }
        });
    outcome.device_allocations = heap.arenas();
    return outcome;
}

}  // namespace memtrail::analysis
