#pragma once
// PyTorch's caching-allocator size rules, as far as the analysis needs them to infer block sizes
// from a trace: a PyTorch trace records the caller's request, not the block it received.

#include <cstdint>

#include "memtrail/snapshot/model.hpp"

namespace memtrail::analysis::detail {

inline constexpr uint64_t min_block_size = 512;        // every block is a multiple of this
inline constexpr uint64_t small_size = 1ull << 20;     // requests up to this use the small pool
inline constexpr uint64_t small_buffer = 2ull << 20;   // size of a small-pool segment
inline constexpr uint64_t large_buffer = 20ull << 20;  // segment for large requests under 10 MiB
inline constexpr uint64_t min_large_alloc = 10ull << 20;
inline constexpr uint64_t round_large = 2ull << 20;

// The size rules of one allocator configuration.
class allocator_rules {
  public:
    allocator_rules() = default;
    explicit allocator_rules(const snapshot::allocator_settings& settings);

    // The block size the allocator asks for when a caller requests `request` bytes.
    uint64_t round_size(uint64_t request) const;

    // Whether a free block of which `size` bytes are taken is split, leaving `remaining` free.
    bool should_split(bool is_small_pool, bool is_expandable, uint64_t size,
                      uint64_t remaining) const;

    // Oversize blocks are never split and counted apart (max_split_size; unlimited by default).
    bool is_oversize(uint64_t size) const { return size >= max_split_size_; }

    // PyTorch's max_split_size statistic: -1 when unlimited.
    int64_t max_split_size_setting() const {
        return max_split_size_ == UINT64_MAX ? -1 : static_cast<int64_t>(max_split_size_);
    }

    // The segment the allocator would create (cudaMalloc) for a rounded request.
    static uint64_t segment_size_for(uint64_t rounded);

    static bool is_small_request(uint64_t rounded) { return rounded <= small_size; }

  private:
    uint64_t divisions_for(uint64_t size) const;

    uint64_t max_split_size_ = UINT64_MAX;
    uint64_t divisions_[16] = {};
};

}  // namespace memtrail::analysis::detail
