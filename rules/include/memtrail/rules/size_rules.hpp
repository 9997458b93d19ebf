#pragma once
// PyTorch's caching-allocator size rules: how a request is rounded, which pool it takes, how
// large a new segment is, when a free block is split and which blocks are oversize. The
// allocator applies them on every allocation, so they are inline; the analysis applies them to
// infer blocks from a trace, which records the caller's request and not the block it received.

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>

namespace memtrail::size_rules {

inline constexpr uint64_t min_block_size = 512;           // every block is a multiple of this
inline constexpr uint64_t small_size = 1ull << 20;        // requests up to this use the small pool
inline constexpr uint64_t small_buffer = 2ull << 20;      // the segment of the small pool
inline constexpr uint64_t large_buffer = 20ull << 20;     // the segment of smaller large requests
inline constexpr uint64_t min_large_alloc = 10ull << 20;  // from here a request gets its own...
inline constexpr uint64_t round_large = 2ull << 20;       // ...segment, rounded up to this

// max_split_size when no limit is set; statistics and snapshots write it as -1.
inline constexpr uint64_t unlimited = std::numeric_limits<uint64_t>::max();

// roundup_power2_divisions has one setting per power-of-two interval: index 0 for sizes below
// 2 MiB, index 15 for 32 GiB and above.
inline constexpr size_t roundup_interval_count = 16;

constexpr size_t roundup_interval(uint64_t size) {
    const int log_size = 63 - std::countl_zero(size);
    const int first = 20;
    const size_t index = log_size > first ? static_cast<size_t>(log_size - first) : 0;
    return std::min(index, roundup_interval_count - 1);
}

// The setting of `size`'s interval; `divisions_per_interval` holds roundup_interval_count.
constexpr uint64_t divisions_for(uint64_t size, std::span<const uint64_t> divisions_per_interval) {
    return divisions_per_interval[roundup_interval(size)];
}

// Rounds up to the next of `divisions` equal steps between two powers of two.
constexpr uint64_t round_to_division(uint64_t size, uint64_t divisions) {
    if (std::has_single_bit(size)) {
        return size;
    }
    const uint64_t power2_floor = std::bit_floor(size);
    const uint64_t step = power2_floor >> (63 - std::countl_zero(divisions));
    if (step == 0) {
        return power2_floor << 1;
    }
    const uint64_t floor = size & ~(step - 1);
    return floor == size ? size : floor + step;
}

// The block size the allocator takes for a request of `size` bytes.
constexpr uint64_t round_size(uint64_t size, std::span<const uint64_t> divisions_per_interval) {
    if (size < min_block_size) {
        return min_block_size;
    }
    const uint64_t divisions = divisions_for(size, divisions_per_interval);
    if (divisions > 1 && size > min_block_size * divisions) {
        return round_to_division(size, divisions);
    }
    return min_block_size * ((size + min_block_size - 1) / min_block_size);
}

constexpr bool is_small_request(uint64_t rounded) {
    return rounded <= small_size;
}

// The segment a new device allocation takes for a rounded request.
constexpr uint64_t segment_size_for(uint64_t rounded) {
    if (rounded <= small_size) {
        return small_buffer;
    }
    if (rounded < min_large_alloc) {
        return large_buffer;
    }
    return round_large * ((rounded + round_large - 1) / round_large);
}

// Oversize blocks are never split and are counted apart.
constexpr bool is_oversize(uint64_t size, uint64_t max_split_size) {
    return size >= max_split_size;
}

// Whether a free block of which `size` bytes are taken is split, leaving `remaining` free.
constexpr bool should_split(bool is_small_pool, bool is_expandable, uint64_t size,
                            uint64_t remaining, uint64_t max_split_size) {
    if (is_small_pool || is_expandable) {
        return remaining >= min_block_size;
    }
    return !is_oversize(size, max_split_size) && remaining > small_size;
}

// max_split_size as PyTorch's statistic and the snapshots' settings record it.
constexpr int64_t max_split_size_statistic(uint64_t max_split_size) {
    return max_split_size == unlimited ? -1 : static_cast<int64_t>(max_split_size);
}

constexpr uint64_t max_split_size_from_statistic(int64_t statistic) {
    return statistic < 0 ? unlimited : static_cast<uint64_t>(statistic);
}

}  // namespace memtrail::size_rules
