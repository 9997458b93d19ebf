#pragma once
// Allocator settings in PYTORCH_CUDA_ALLOC_CONF syntax ("key:value,key:[a:b,c:d]").
// Every key is listed once, in allocator_options()'s table (allocator_config.cpp); the table
// drives the parser and its error messages, and docs/configuration.md lists the same keys
// (tests/core/allocator_config_test.cpp compares them).

#include <cstdint>
#include <limits>
#include <span>
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

// How threads share a device's lock (not PYTORCH_CUDA_ALLOC_CONF keys: librecorder fills them
// from MEMTRAIL_DEVICE_LOCK and MEMTRAIL_DEVICE_LOCK_BIAS, docs/configuration.md).
struct device_lock_options {
    // Waiters hand their operations to the lock's holder (else they spin for the lock).
    bool combining = true;
    // After a run of acquisitions by one thread, the lock is biased to it.
    bool biased = true;
};

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
    device_lock_options device_lock;

    // Parses a configuration string; throws config_error on unknown or repeated keys and bad
    // values. `origin`, when given (an environment variable's name), starts every error.
    static allocator_config parse(std::string_view text, std::string_view origin = {});

    // Divisions for a request of `size` bytes.
    uint64_t divisions_for(uint64_t size) const;
};

namespace detail {
class config_reader;
}

// One row of the table of keys, as mimalloc keeps its options.
struct allocator_option {
    std::string_view key;
    std::string_view default_value;  // as docs/configuration.md shows it
    std::string_view accepted;       // what the error for a bad value says is accepted
    // Reads the key's value and stores it in its member of allocator_config.
    void (*parse)(detail::config_reader& reader, const allocator_option& option,
                  allocator_config& config);
};

// Every key allocator_config::parse accepts, in the order docs/configuration.md lists them.
std::span<const allocator_option> allocator_options();

}  // namespace memtrail
