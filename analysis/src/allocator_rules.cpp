#include "allocator_rules.hpp"

#include <algorithm>
#include <bit>

namespace memtrail::analysis::detail {

allocator_rules::allocator_rules(const snapshot::allocator_settings& settings) {
    if (settings.max_split_size >= 0) {
        max_split_size_ = static_cast<uint64_t>(settings.max_split_size);
    }
    const size_t count = std::min<size_t>(settings.roundup_power2_divisions.size(), 16);
    std::copy_n(settings.roundup_power2_divisions.begin(), count, divisions_);
}

// One setting per power-of-two interval from 1 MiB (index 0, also for smaller sizes) to 32 GiB
// and above (index 15).
uint64_t allocator_rules::divisions_for(uint64_t size) const {
    const int log_size = std::bit_width(size) - 1;
    const int index = std::clamp(log_size - 20, 0, 15);
    return divisions_[index];
}

uint64_t allocator_rules::round_size(uint64_t request) const {
    if (request < min_block_size) {
        return min_block_size;
    }
    const uint64_t divisions = divisions_for(request);
    if (divisions > 1 && request > min_block_size * divisions) {
        // Round up to the next of `divisions` equal steps between two powers of two.
        if (std::has_single_bit(request)) {
            return request;
        }
        const uint64_t floor = std::bit_floor(request);
        const uint64_t step = floor / std::bit_floor(divisions);
        if (step == 0) {
            return floor << 1;
        }
        const uint64_t down = request & ~(step - 1);
        return down == request ? request : down + step;
    }
    return (request + min_block_size - 1) / min_block_size * min_block_size;
}

bool allocator_rules::should_split(bool is_small_pool, bool is_expandable, uint64_t size,
                                   uint64_t remaining) const {
    if (is_small_pool || is_expandable) {
        return remaining >= min_block_size;
    }
    return size < max_split_size_ && remaining > small_size;
}

uint64_t allocator_rules::segment_size_for(uint64_t rounded) {
    if (rounded <= small_size) {
        return small_buffer;
    }
    if (rounded < min_large_alloc) {
        return large_buffer;
    }
    return (rounded + round_large - 1) / round_large * round_large;
}

}  // namespace memtrail::analysis::detail
