#pragma once
// A caching allocator that makes exactly the decisions PyTorch's CUDACachingAllocator (torch
// 2.11) makes: the same rounding, pools, best fit, splits and merges, per-stream reuse,
// record_stream, oversize blocks, garbage collection, expandable segments and the OOM retry path,
// with the same statistics. One device_allocator per device; caching_allocator fronts several.

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "memtrail/core/allocator_config.hpp"
#include "memtrail/core/device.hpp"
#include "memtrail/core/statistics.hpp"

namespace memtrail {

// The allocator's own events, in PyTorch's trace vocabulary.
enum class allocator_action : uint8_t {
    alloc,
    free_requested,
    free_completed,
    segment_alloc,
    segment_free,
    segment_map,
    segment_unmap,
    snapshot,
    oom,
};

// Opaque caller context attached to an allocation (the recorder stores a stack/time id here).
using context_handle = uint64_t;

struct allocator_event {
    allocator_action action = allocator_action::alloc;
    int device = 0;
    device_address address = 0;  // oom: the device's free bytes, as PyTorch records it
    uint64_t size = 0;  // alloc/free: the caller's request; segments: bytes; oom: rounded request
    uint64_t block_size = 0;  // alloc/free: the block's size; otherwise equal to size
    stream_handle stream = 0;
    context_handle context = 0;
};

// Receives every event as it happens, under the device's lock: it must be quick and must not
// call back into the allocator.
class allocator_observer {
  public:
    virtual ~allocator_observer() = default;
    virtual void on_event(const allocator_event& event) = 0;
};

// Thrown when an allocation cannot be satisfied even after freeing the cache.
class out_of_memory_error : public std::runtime_error {
  public:
    out_of_memory_error(const std::string& message, int device_index, uint64_t requested_bytes,
                        uint64_t free_bytes, uint64_t total_bytes)
        : std::runtime_error(message),
          device(device_index),
          requested(requested_bytes),
          device_free(free_bytes),
          device_total(total_bytes) {}
    int device;
    uint64_t requested;
    uint64_t device_free;
    uint64_t device_total;
};

// Thrown for misuse: an unknown pointer, a double free, an absurd size, the wrong device.
// The allocator's state is unchanged when it is thrown.
class usage_error : public std::invalid_argument {
  public:
    using std::invalid_argument::invalid_argument;
};

// The usage_error of a free or record_stream given an address the allocator does not hold: never
// handed out, or freed already.
class unknown_pointer_error : public usage_error {
  public:
    using usage_error::usage_error;
};

// How hard a free-memory callback should try (a host runtime's light or full garbage collection).
enum class memory_pressure : uint8_t { light, full };
// Called before the allocator asks the device for more memory; returns true if it freed something.
// It runs without the device's lock (unless the allocating thread held it already): it may free
// and allocate, on its own thread or by waiting for others.
using free_memory_callback = std::function<bool(int device, memory_pressure pressure)>;
// Called after an OOM, outside the allocator's lock.
using oom_observer = std::function<void(int device, uint64_t alloc_size, uint64_t total_or_allowed,
                                        uint64_t device_free)>;

struct block_info {
    device_address address = 0;
    uint64_t size = 0;
    uint64_t requested_size = 0;
    bool allocated = false;
    bool active = false;  // allocated, or freed but still in use on another stream
    context_handle context = 0;
};

struct segment_info {
    int device = 0;
    device_address address = 0;
    uint64_t total_size = 0;
    uint64_t allocated_size = 0;
    uint64_t active_size = 0;
    uint64_t requested_size = 0;
    stream_handle stream = 0;
    bool is_large = true;
    bool is_expandable = false;
    context_handle context = 0;
    std::vector<block_info> blocks;
};

namespace detail {
class device_allocator_impl;
}

class device_allocator {
  public:
    device_allocator(device& dev, allocator_config config = {});
    ~device_allocator();
    device_allocator(const device_allocator&) = delete;
    device_allocator& operator=(const device_allocator&) = delete;

    // Returns the address of a block of at least `size` bytes usable on `stream`.
    // Throws out_of_memory_error, or usage_error for a size of 0 bytes' complement (1 EB and more).
    device_address allocate(uint64_t size, stream_handle stream = 0, context_handle context = 0);
    // Returns a block; throws usage_error for an address this allocator did not hand out.
    void free(device_address address, context_handle context = 0);
    // Marks a block as used on `stream`: its memory is reused only after that stream's work ends.
    void record_stream(device_address address, stream_handle stream);
    // Frees cached blocks completely unused back to the device.
    void empty_cache(context_handle context = 0);
    // Limits the allocator to fraction * total device memory.
    void set_memory_fraction(double fraction);
    // Recycles blocks whose cross-stream uses have completed (done at every allocate as well).
    void process_events(context_handle context = 0);
    // Whether allocate(size, stream) would give cached memory back to the device first
    // (garbage collection, or the release after a failed device allocation). Changes nothing;
    // replay uses it to tell an allocation's releases from an explicit empty_cache.
    bool would_release_memory(uint64_t size, stream_handle stream) const;

    device_stats stats() const;
    std::map<std::string, int64_t> memory_stats() const { return to_memory_stats(stats()); }
    std::string memory_summary(bool abbreviated = false) const;
    void reset_peak_stats();
    void reset_accumulated_stats();

    // The allocator's segments and blocks, sorted by address (PyTorch's snapshot()).
    std::vector<segment_info> snapshot(bool record_event = true) const;
    // Size of the block at `address` if it is allocated here, else 0.
    uint64_t allocated_size(device_address address) const;
    bool owns(device_address address) const { return allocated_size(address) != 0; }
    // Recounts every statistic from the blocks and checks the bookkeeping; returns a description
    // of each inconsistency, or "" when all is well (for tests and debugging, takes the lock).
    std::string check_consistency() const;

    const allocator_config& config() const;
    // Replaces the settings (for example to switch expandable segments off for a while).
    void set_config(allocator_config config);

    void set_observer(allocator_observer* observer);
    void add_free_memory_callback(free_memory_callback callback);
    void add_oom_observer(oom_observer observer);

    device& get_device() const;
    int device_index() const;

  private:
    std::unique_ptr<detail::device_allocator_impl> impl_;
};

// One allocator per device, behind one front door (what librecorder and PyTorch talk to).
class caching_allocator {
  public:
    caching_allocator(std::vector<device*> devices, allocator_config config = {});
    ~caching_allocator();

    device_address allocate(uint64_t size, int device, stream_handle stream = 0,
                            context_handle context = 0);
    // Frees `address`. When `expected_device` is given (>= 0) and the block lives on another
    // device, throws usage_error naming both devices.
    void free(device_address address, int expected_device = -1, context_handle context = 0);
    void record_stream(device_address address, stream_handle stream);
    void empty_cache();

    int device_count() const { return static_cast<int>(devices_.size()); }
    device_allocator& on(int device);
    // The device whose allocator handed out `address`, or -1.
    int device_of(device_address address) const;

  private:
    device_allocator& checked(int device) const;
    std::vector<std::unique_ptr<device_allocator>> devices_;
};

}  // namespace memtrail
