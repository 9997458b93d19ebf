#pragma once
// The per-device caching allocator. Its methods follow PyTorch's DeviceCachingAllocator step by
// step, because parity means taking the same branches in the same order; the files split it by
// concern: allocate.cpp (the malloc path), free.cpp (frees and cross-stream events),
// release.cpp (giving memory back: oversize release, empty_cache, garbage collection),
// expandable.cpp (expandable segments), introspection.cpp (stats, snapshot, consistency checks).

#include <deque>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "detail/address_map.hpp"
#include "detail/block.hpp"
#include "detail/block_arena.hpp"
#include "detail/combining_lock.hpp"
#include "detail/expandable_segment.hpp"
#include "detail/reentrant_mutex.hpp"
#include "detail/segment_span.hpp"
#include "memtrail/core/caching_allocator.hpp"
#include "memtrail/rules/size_rules.hpp"

namespace memtrail::detail {

struct alloc_params {
    free_entry search_key{0, 0, 0};  // stream + rounded size, address 0: the best-fit key
    block_pool* pool = nullptr;
    uint64_t alloc_size = 0;  // what a new segment would take
    block* found = nullptr;
    bool out_of_memory = false;
    uint64_t size() const { return search_key.size; }
    stream_handle stream() const { return search_key.stream; }
};

// An allocation or a free handed to the device lock's holder (combining_lock.hpp), which copies
// it into a slot of one cache line: the two one-byte fields come first to keep it in 56 bytes,
// and what the holder throws goes to the requester's own exception_ptr, so that the record is
// plain words to copy.
struct delegated_op {
    enum class kind : uint8_t { malloc, free };
    kind what;
    // Set by the holder: whether it made the whole operation (else it leaves the operation to
    // the requester, having changed nothing but, for a free, taking the block from the map).
    bool made = false;
    uint64_t size;  // malloc: the requested size
    stream_handle stream;
    context_handle context;
    device_address address;  // free: the address to free. malloc: the address allocated
    // free: the block taken from the address map (nullptr: the address is not allocated here),
    // set by the holder whether or not it made the free.
    block* b;
    std::exception_ptr* error;  // where the holder puts what it threw
};

class device_allocator_impl {
  public:
    device_allocator_impl(device& dev, allocator_config config);
    ~device_allocator_impl();

    // delegation.cpp: the entry points, on the device lock or delegated to its holder. A block
    // enters the address map where it becomes allocated (alloc_found_block), and free takes it
    // out, both under the lock.
    // The address of the block allocated (read here, so that a waiter served by the lock's holder
    // does not fetch the block's line from the holder's cache).
    device_address malloc(uint64_t orig_size, stream_handle stream, context_handle context);
    // Frees the block at `address` and returns it; nullptr, changing nothing, when no allocated
    // block starts there.
    block* free(device_address address, context_handle context);

    // free.cpp
    // false, changing nothing, when no allocated block starts at `address`.
    bool record_stream(device_address address, stream_handle stream);
    void process_events_locked(context_handle context);

    // release.cpp
    void empty_cache(context_handle context, pool_id pool);
    void set_memory_fraction(double fraction);
    double memory_fraction() const;

    // private_pools.cpp
    void create_pool(pool_id id, pool_options options);
    void begin_allocate_to_pool(pool_id id, stream_filter filter);
    void end_allocate_to_pool(pool_id id);
    void release_pool(pool_id id);
    int pool_use_count(pool_id id) const;
    bool allocates_to_pool(stream_handle stream) const;

    // introspection.cpp
    bool would_release_memory(uint64_t size, stream_handle stream);
    bool has_cached_block(uint64_t size, stream_handle stream, pool_id pool);
    device_stats get_stats() const;
    void reset_peak_stats();
    void reset_accumulated_stats();
    std::vector<segment_info> snapshot(bool record_event) const;
    std::string check_consistency() const;

    static uint64_t round_size(uint64_t size, const allocator_config& config) {
        return size_rules::round_size(size, config.roundup_power2_divisions);
    }

    device& dev;
    allocator_config config;
    mutable reentrant_mutex mutex{config.device_lock.biased ? reentrant_mutex::default_bias_after
                                                            : reentrant_mutex::never_biased};
    combining_lock<delegated_op> combiner{
        mutex, config.device_lock.combining};  // malloc's and free's way to `mutex`
    address_map allocated;                      // address -> allocated block, under `mutex`
    segment_span segments;                      // where this device's segments lie, lock-free
    allocator_observer* observer = nullptr;
    std::vector<free_memory_callback> free_memory_callbacks;
    std::vector<oom_observer> oom_observers;

  private:
    friend class ::memtrail::device_allocator;

    // delegation.cpp
    [[gnu::noinline]] device_address malloc_when_busy(uint64_t orig_size, stream_handle stream,
                                              context_handle context);
    block* malloc_entered(bool reentered, uint64_t orig_size, stream_handle stream,
                          context_handle context);
    [[gnu::noinline]] block* free_when_busy(device_address address, context_handle context);
    // `taken`: the block a holder took from the map already, else nullptr.
    block* free_entered(bool reentered, device_address address, block* taken,
                        context_handle context);
    // Inline: it is called after every operation and mostly finds no waiter.
    void serve_waiters() {
        combiner.serve_waiters([this](delegated_op& op) { run_delegated(op); });
    }
    void run_delegated(delegated_op& op) noexcept;

    // allocate.cpp
    block* malloc_locked(uint64_t orig_size, stream_handle stream, context_handle context,
                         std::unique_lock<reentrant_mutex>& lock);
    block* malloc_cached(uint64_t orig_size, stream_handle stream, context_handle context);
    alloc_params params_for(uint64_t orig_size, stream_handle stream) {
        alloc_params p;
        p.search_key.stream = stream;
        p.search_key.size = round_size(orig_size, config);
        p.pool = &get_pool(p.search_key.size, stream);
        p.alloc_size = size_rules::segment_size_for(p.search_key.size);
        return p;
    }
    block_pool& get_pool(uint64_t size, stream_handle stream) {
        if (!captures_underway_.empty()) [[unlikely]] {
            if (block_pool* pool = capturing_pool(size, stream)) {
                return *pool;
            }
        }
        return size_rules::is_small_request(size) ? small_blocks_ : large_blocks_;
    }
    bool get_free_block(alloc_params& p);
    bool find_or_make_block(alloc_params& p, context_handle context,
                            std::unique_lock<reentrant_mutex>& lock);
    bool trigger_free_memory_callbacks();
    bool run_free_memory_callbacks(memory_pressure pressure);
    bool alloc_block(alloc_params& p, bool is_retry, context_handle context,
                     std::unique_lock<reentrant_mutex>& lock);
    bool should_split(const block* b, uint64_t size) const {
        if (b->pool->owner && !no_split_pools_.empty() && no_split_pools_.count(b->pool->owner->id))
            [[unlikely]] {
            return false;  // torch.cuda.MemPool(no_split=True)
        }
        return size_rules::should_split(b->pool->is_small, config.expandable_segments, size,
                                        b->size - size, config.max_split_size);
    }
    bool is_oversize(uint64_t size) const {
        return size_rules::is_oversize(size, config.max_split_size);
    }
    block* alloc_found_block(alloc_params& p, uint64_t orig_size, context_handle context,
                             bool split_remainder);
    bool try_use_on_oom_pools(alloc_params& p);
    [[noreturn]] void raise_out_of_memory(alloc_params& p, context_handle context,
                                          std::unique_lock<reentrant_mutex>& lock);

    // private_pools.cpp
    block_pool* capturing_pool(uint64_t size, stream_handle stream);
    private_pool& create_or_incref_pool(pool_id id);
    private_pool* find_pool(pool_id id) const;
    // Applies f to every block pool: the default ones, then each private pool's.
    template <typename F>
    void for_each_block_pool(F f) const {
        f(small_blocks_);
        f(large_blocks_);
        for (const auto& [id, pool] : private_pools_) {
            f(pool->small_blocks);
            f(pool->large_blocks);
        }
    }
    uint64_t free_bytes_in_private_pools() const;

    // free.cpp
    void free_locked(block* b, context_handle context);
    bool free_at_once(block* b, context_handle context);
    void free_block(block* b, context_handle context);
    // free_block for a block whose free waited for events (or for a capture to end).
    void free_pending_block(block* b, context_handle context);
    // Merges src into dst when src is free, its neighbour and mapped alike; returns the bytes
    // it took over (0: no merge). Most frees find an allocated neighbour, so the check is inline.
    uint64_t try_merge_blocks(block* dst, block* src, block_pool& pool) {
        if (!src || src->allocated || src->event_count > 0 || !src->stream_uses.empty() ||
            dst->mapped != src->mapped) {
            return 0;
        }
        return merge_blocks(dst, src, pool);
    }
    uint64_t merge_blocks(block* dst, block* src, block_pool& pool);
    void insert_events(block* b);
    void insert_events_deferred_until_no_capture(context_handle context);
    // Waits for the outstanding events (of one private pool's blocks, when given).
    void synchronize_and_free_events(context_handle context, const private_pool* only = nullptr);
    event_handle acquire_event();

    // release.cpp
    bool release_available_cached_blocks(const alloc_params& p, context_handle context);
    bool release_cached_blocks(context_handle context, pool_id pool);
    void release_blocks(block_pool& pool, context_handle context);
    void release_block(block* b, context_handle context);
    void garbage_collect_cached_blocks(context_handle context);

    // expandable.cpp
    block* find_expandable_block(stream_handle stream, block_pool& pool, uint64_t size);
    bool map_block(block* to_map, uint64_t size, context_handle context);
    block* try_allocate_expandable_block(stream_handle stream, block_pool& pool, uint64_t size,
                                         context_handle context);
    void unmap_block(block* b, context_handle context);
    void release_expandable_segment(block* b);

    // Applies f to every active block (allocated or waiting for events), found where each
    // already is, so allocation and free keep no list of them: the address map, the blocks a
    // lock holder took from it for a free it left to the requester, the frees deferred until no
    // capture is under way, and the event queues (a block waiting on several streams is in
    // several queues: f may see it more than once).
    template <typename F>
    void for_each_active_block(F f) const {
        allocated.for_each(f);
        for (block* b : handed_back_) {
            f(b);
        }
        for (block* b : deferred_until_no_capture_) {
            f(b);
        }
        for (const auto& [stream, queue] : stream_events_) {
            for (const auto& [event, b] : queue) {
                f(b);
            }
        }
    }

    void record(allocator_action action, device_address address, uint64_t size, uint64_t block_size,
                stream_handle stream, context_handle context, const block_pool* pool = nullptr) {
        // Every segment and every mapped part of an expandable one is announced here.
        if (action == allocator_action::segment_alloc || action == allocator_action::segment_map) {
            segments.widen(address, size);
        }
        if (observer) {
            observer->on_event({action, device_index_, address, size, block_size, stream, context,
                                pool ? owner_id(*pool) : pool_id{}});
        }
    }
    template <typename Array, typename F>
    [[gnu::always_inline]] static void for_pool_stats(Array& array, const block_pool& pool, F f) {
        memtrail::for_pool_stats(array, pool_stat_type(pool.is_small), f);
    }

    // What PyTorch's active counters add to allocation and allocated_bytes: the blocks a caller
    // freed that wait for events on other streams (pending). The two move together otherwise, so
    // an allocation and a free update only allocation's, and get_stats() derives active's.
    struct pending_stat {
        int64_t current = 0;      // active.current - allocation.current
        int64_t active_peak = 0;  // active's peak, where it exceeds allocation's
        int64_t freed_lag = 0;    // allocation.freed - active.freed
    };
    using pending_array = std::array<pending_stat, stat_type_count>;
    // A block starts (blocks 1) or stops (-1) waiting for events after its caller freed it.
    void add_pending(const block_pool& pool, int64_t blocks, int64_t bytes) {
        for_pool_stats(pending_blocks_, pool, [blocks](pending_stat& s) {
            s.current += blocks;
            s.freed_lag += blocks;
        });
        for_pool_stats(pending_bytes_, pool, [bytes](pending_stat& s) {
            s.current += bytes;
            s.freed_lag += bytes;
        });
    }
    [[gnu::noinline]] void note_active_peaks(const block_pool& pool);
    // active from allocation and the pending counters, as in the statistics PyTorch reports.
    static stat_array active_from(const stat_array& allocation, const pending_array& pending);
    device_stats with_active_stats() const;

    int device_index_;
    device_stats stats_;  // active and active_bytes stay zero: see pending_stat
    pending_array pending_blocks_;
    pending_array pending_bytes_;
    block_pool large_blocks_{false};
    block_pool small_blocks_{true};
    // Blocks taken from the address map by a lock holder that left their free to the
    // requester (delegation.cpp): allocated still, and until the requester frees them, in no
    // other place for_each_active_block looks.
    std::vector<block*> handed_back_;
    block_arena arena_;
    // Outstanding cross-stream events, per stream, in recording order.
    std::map<stream_handle, std::deque<std::pair<event_handle, block*>>> stream_events_;
    std::vector<event_handle> event_pool_;
    uint64_t total_allocated_memory_ = 0;  // bytes held from the device (segments + mapped pages)
    uint64_t allowed_memory_maximum_ = 0;
    bool set_fraction_ = false;
    double memory_fraction_ = 0.0;
    std::vector<std::unique_ptr<expandable_segment>> expandable_segments_;

    // Private pools (private_pools.cpp). Ordered maps: empty_cache walks the released pools in
    // a fixed order, so a replay releases their segments in the same order every time.
    std::map<pool_id, std::unique_ptr<private_pool>> private_pools_;
    std::map<pool_id, private_pool*> freeable_pools_;  // released, waiting for their segments
    std::vector<std::pair<pool_id, stream_filter>> captures_underway_;  // oldest first
    std::set<pool_id> use_on_oom_pools_;
    std::set<pool_id> no_split_pools_;
    // Frees of blocks used on other streams while a pool was being allocated to: recording
    // their events is deferred until no capture is under way (event queries break a capture).
    std::vector<block*> deferred_until_no_capture_;
    // Streams that used a block during a capture; their uses end with the capture.
    std::unordered_map<block*, std::vector<stream_handle>> capture_stream_uses_;
};

}  // namespace memtrail::detail
