#pragma once
// PyTorch's allocator statistics: each counter keeps current, peak, allocated (sum of increases)
// and freed (sum of decreases), for all pools together and for the small and large pool.

#include <array>
#include <cstdint>
#include <map>
#include <string>

namespace memtrail {

struct stat {
    int64_t current = 0;
    int64_t peak = 0;
    int64_t allocated = 0;
    int64_t freed = 0;

    void increase(uint64_t amount) {
        current += static_cast<int64_t>(amount);
        if (current > peak) {
            peak = current;
        }
        allocated += static_cast<int64_t>(amount);
    }
    void decrease(uint64_t amount) {
        current -= static_cast<int64_t>(amount);
        freed += static_cast<int64_t>(amount);
    }
    void reset_accumulated() { allocated = freed = 0; }
    void reset_peak() { peak = current; }
    bool operator==(const stat&) const = default;
};

enum class stat_type : uint8_t { aggregate = 0, small_pool = 1, large_pool = 2 };
inline constexpr size_t stat_type_count = 3;
using stat_array = std::array<stat, stat_type_count>;

inline constexpr stat_type pool_stat_type(bool is_small_pool) {
    return is_small_pool ? stat_type::small_pool : stat_type::large_pool;
}

// Every change to a pool's counter changes the aggregate the same way: applies f to both (in any
// array indexed by stat_type).
template <typename Array, typename F>
void for_pool_stats(Array& array, stat_type pool, F&& f) {
    f(array[static_cast<size_t>(stat_type::aggregate)]);
    f(array[static_cast<size_t>(pool)]);
}

struct device_stats {
    stat_array allocation;      // blocks handed to callers
    stat_array segment;         // device allocations (cudaMalloc'd segments)
    stat_array active;          // allocated or waiting for other streams
    stat_array inactive_split;  // free blocks inside split segments
    stat_array allocated_bytes;
    stat_array reserved_bytes;
    stat_array active_bytes;
    stat_array inactive_split_bytes;
    stat_array requested_bytes;
    int64_t num_alloc_retries = 0;
    int64_t num_ooms = 0;
    stat oversize_allocations;
    stat oversize_segments;
    int64_t num_sync_all_streams = 0;
    int64_t num_device_alloc = 0;
    int64_t num_device_free = 0;
    int64_t max_split_size = -1;
    bool operator==(const device_stats&) const = default;
};

// The counters under torch.cuda.memory_stats() names ("allocated_bytes.all.current", ...).
std::map<std::string, int64_t> to_memory_stats(const device_stats& stats);

// PyTorch's memory_summary() table.
std::string format_memory_summary(const device_stats& stats, int device, bool abbreviated = false);

// "1.50 GiB" the way PyTorch's format_size prints it.
std::string format_size(uint64_t bytes);

}  // namespace memtrail
