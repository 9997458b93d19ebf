#pragma once
// A caching allocator that makes exactly the decisions PyTorch's CUDACachingAllocator (torch
// 2.11) makes: the same rounding, pools, best fit, splits and merges, per-stream reuse,
// record_stream, oversize blocks, garbage collection, expandable segments and the OOM retry path,
// with the same statistics. One device_allocator per device; caching_allocator fronts several.

#include <compare>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "memtrail/core/allocator_config.hpp"
#include "memtrail/core/device.hpp"
#include "memtrail/rules/statistics.hpp"

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

// A private memory pool, named as PyTorch names them (MempoolId_t): user pools are (0, N)
// (torch.cuda.MemPool), pools a CUDA graph capture makes for itself are (N, 0), and (0, 0) is
// the default pools every allocation uses unless a pool is being allocated to.
struct pool_id {
    uint64_t first = 0;
    uint64_t second = 0;
    bool is_default() const { return first == 0 && second == 0; }
    auto operator<=>(const pool_id&) const = default;
};

// Which allocations go to a pool while it is being allocated to: PyTorch passes "the stream is
// the capturing stream" for a graph capture and "the caller is this thread" for use_mem_pool.
using stream_filter = std::function<bool(stream_handle)>;

struct pool_options {
    bool no_split = false;    // blocks of this pool are never split (torch.cuda.MemPool(no_split))
    bool use_on_oom = false;  // searched for a free block before an allocation fails with OOM
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
    pool_id pool;  // the private pool of the block or segment; (0, 0) for the default pools
    // The thread that asked for the operation, as its observer's caller() named it there, when
    // the device lock's holder made the operation for it; 0: the thread calling on_event.
    uint64_t caller = 0;
};

// Receives every event as it happens, under the device's lock: it must be quick and must not
// call back into the allocator.
class allocator_observer {
  public:
    virtual ~allocator_observer() = default;
    virtual void on_event(const allocator_event& event) = 0;
    // A non-zero word naming the calling thread, asked on a thread that hands its operation to
    // the device lock's holder and given back in the operation's events (allocator_event::
    // caller); 0 (the default): such operations are not handed over while this observer is set.
    virtual uint64_t caller() const { return 0; }
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
// Called before the allocator asks the device for more memory, and once more with full pressure
// before an allocation fails (then the allocation is tried again); returns true if it freed
// something.
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
    pool_id pool;  // (0, 0) unless the segment belongs to a private pool
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
    // Frees cached blocks completely unused back to the device: those of the default pools and
    // of private pools already released (PyTorch's emptyCache).
    void empty_cache(context_handle context = 0);
    // Frees the cached blocks of one released private pool (and of the others released).
    void empty_cache(pool_id pool, context_handle context = 0);

    // Private pools, as torch 2.11's allocator keeps them (CUDA graphs, torch.cuda.MemPool).
    // Creates the pool, or takes one more use of it (createOrIncrefPool).
    void create_pool(pool_id pool, pool_options options = {});
    // Allocations that `filter` accepts go to `pool` until end_allocate_to_pool; pools being
    // allocated to are searched newest first. Creates the pool or takes a use of it.
    void begin_allocate_to_pool(pool_id pool, stream_filter filter);
    void end_allocate_to_pool(pool_id pool);
    // Gives up one use; at none, the pool's cached blocks are returned at the next empty_cache
    // (or OOM flush) and the pool is deleted once it holds no segments.
    void release_pool(pool_id pool);
    // Uses of a pool; 0 for a pool released or unknown.
    int pool_use_count(pool_id pool) const;
    // Whether an allocation on `stream` made now by the calling thread would go to a private
    // pool (a pool being allocated to whose filter accepts it).
    bool allocates_to_pool(stream_handle stream) const;
    // Limits the allocator to fraction * total device memory.
    void set_memory_fraction(double fraction);
    // The fraction set_memory_fraction set, or 0 when none was set.
    double memory_fraction() const;
    // Recycles blocks whose cross-stream uses have completed (done at every allocate as well).
    void process_events(context_handle context = 0);
    // Whether allocate(size, stream) would give cached memory back to the device first
    // (garbage collection, or the release after a failed device allocation). Changes nothing;
    // replay uses it to tell an allocation's releases from an explicit empty_cache.
    bool would_release_memory(uint64_t size, stream_handle stream) const;
    // Whether an allocation of `size` on `stream` made to `pool` would be served from a cached
    // block. Changes nothing; replay uses it to tell which pool made a new segment.
    bool has_cached_block(uint64_t size, stream_handle stream, pool_id pool) const;

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
    // Whether `address` lies where this allocator has mapped segments, without taking its lock:
    // false means it cannot be one of its blocks; true means it may be.
    bool may_own(device_address address) const;
    // Recounts every statistic from the blocks and checks the bookkeeping; returns a description
    // of each inconsistency, or "" when all is well (for tests and debugging, takes the lock).
    std::string check_consistency() const;

    const allocator_config& config() const;
    // Replaces the settings (for example to switch expandable segments off for a while); the
    // device lock keeps the options the allocator was made with.
    void set_config(allocator_config config);

    void set_observer(allocator_observer* observer);
    allocator_observer* observer() const;  // nullptr: none
    // Runs `f` holding the device's lock, as the observer's events run, so that what `f` does is
    // ordered with every event (the recorder's trace: annotations, resizing, copies). `f` may
    // call only the allocator's methods that never wait for the device (snapshot, stats).
    void run_under_lock(const std::function<void()>& f);
    void add_free_memory_callback(free_memory_callback callback);
    void add_oom_observer(oom_observer observer);

    device& get_device() const;
    int device_index() const;

  private:
    std::unique_ptr<detail::device_allocator_impl> impl_;
};

// free()'s `expected_device` when the caller does not know it: the owner is looked up.
inline constexpr int unknown_device = -1;

// One allocator per device, behind one front door (what librecorder and PyTorch talk to).
class caching_allocator {
  public:
    caching_allocator(std::vector<device*> devices, allocator_config config = {});
    ~caching_allocator();

    device_address allocate(uint64_t size, int device, stream_handle stream = 0,
                            context_handle context = 0);
    // Frees `address`. When `expected_device` is given (not unknown_device) and the block lives
    // on another device, throws usage_error naming both devices; a device that does not exist
    // (negative ones included) is refused like any other.
    void free(device_address address, int expected_device = unknown_device,
              context_handle context = 0);
    void record_stream(device_address address, stream_handle stream);
    void empty_cache();

    int device_count() const { return static_cast<int>(devices_.size()); }
    // Inline: every allocation through librecorder looks its device up here.
    device_allocator& on(int device) {
        if (device >= 0 && device < device_count()) [[likely]] {
            return *devices_[static_cast<size_t>(device)];
        }
        return checked(device);  // throws usage_error
    }
    // The device whose allocator handed out `address`, or -1 (takes each device's lock in turn).
    int device_of(device_address address) const;
    // The device that a free or record_stream of `address` that names none goes to, found
    // without taking a device's lock where it can be: with one device, that device; with
    // several, the only one whose segments lie around the address, or device_of's answer when
    // more than one do. -1 when no device can own it. The device's own lookup still decides
    // whether it does.
    int device_for(device_address address) const;

  private:
    device_allocator& checked(int device) const;
    std::vector<std::unique_ptr<device_allocator>> devices_;
};

}  // namespace memtrail
