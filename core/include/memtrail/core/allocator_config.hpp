#pragma once
// Allocator settings in PYTORCH_CUDA_ALLOC_CONF syntax ("key:value,key:[a:b,c:d]").
// Every option is listed once, in allocator_config.cpp's table (name, default, meaning).

#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "memtrail/rules/size_rules.hpp"

namespace memtrail {

// A bad configuration string: names the key, the value and what is accepted.
class config_error : public std::invalid_argument {
  public:
    using std::invalid_argument::invalid_argument;
};

// roundup_power2_divisions holds one setting per interval of the size rules.
using size_rules::roundup_interval_count;

struct allocator_config {
    // Blocks at least this large are never split ("oversize"); SIZE_MAX = unlimited.
    uint64_t max_split_size = std::numeric_limits<uint64_t>::max();
    // An oversize request may take a cached oversize block at most this much larger.
    uint64_t max_non_split_rounding_size = 20ull << 20;
    // Fraction of the allowed memory above which cached blocks are reclaimed (0 = off).
    double garbage_collection_threshold = 0.0;
    // Divisions per power-of-two interval for size rounding (0 or 1 = plain 512 B rounding).
    std::vector<uint64_t> roundup_power2_divisions =
        std::vector<uint64_t>(roundup_interval_count, 0);
    bool expandable_segments = false;
    bool release_lock_on_device_malloc = false;
    // Thresholds that pick the pressure level passed to free-memory callbacks.
    double callback_reserved_rate = 0.2;
    double callback_allocated_rate = 0.8;
    double callback_allocated_reserved_rate = 0.8;
    // The string this configuration was parsed from ("" for defaults).
    std::string source;

    // Parses a configuration string; throws config_error on unknown keys and bad values.
    static allocator_config parse(std::string_view text);
    // Parses MEMTRAIL_ALLOC_CONF (or defaults when unset).
    static allocator_config from_environment();

    // Divisions for a request of `size` bytes.
    uint64_t divisions_for(uint64_t size) const;
};

}  // namespace memtrail
