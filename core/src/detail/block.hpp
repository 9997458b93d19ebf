#pragma once
// Blocks and pools: the allocator's bookkeeping, laid out as in PyTorch so that the same
// sequence of requests walks the same ordered sets and makes the same choices.

#include <algorithm>
#include <cstdint>
#include <set>
#include <vector>

#include "memtrail/core/caching_allocator.hpp"

namespace memtrail::detail {

struct block_pool;
struct private_pool;
class expandable_segment;

// An entry of the free-block set. It carries a copy of the block's sort key so the best-fit
// search compares without touching the blocks themselves (a cache miss per tree level saved);
// a block's key never changes while it is in the set. It converts to the block it names.
struct free_entry {
    inline free_entry(block* blk);  // defined after block
    free_entry(stream_handle s, uint64_t bytes, device_address address)
        : stream(s), size(bytes), ptr(address), b(nullptr) {}
    operator block*() const { return b; }
    block* operator->() const { return b; }
    stream_handle stream;
    uint64_t size;
    device_address ptr;
    block* b;
};

// PyTorch orders free blocks by (stream, size, address): a lower_bound is the best fit.
struct order_by_size {
    bool operator()(const free_entry& a, const free_entry& b) const {
        if (a.stream != b.stream) {
            return a.stream < b.stream;
        }
        if (a.size != b.size) {
            return a.size < b.size;
        }
        return a.ptr < b.ptr;
    }
};

// Nodes of the free-block set are freed and made on nearly every allocation and free; keeping
// them on a free list costs less than the general-purpose heap. Used under the device lock.
class node_recycler {
  public:
    node_recycler() = default;
    node_recycler(const node_recycler&) = delete;
    node_recycler& operator=(const node_recycler&) = delete;
    ~node_recycler() {
        for (void* p : free_) {
            ::operator delete(p);
        }
    }
    void* get(size_t bytes) {
        if (bytes == node_size_ && !free_.empty()) {
            void* p = free_.back();
            free_.pop_back();
            return p;
        }
        if (node_size_ == 0) {
            node_size_ = bytes;
        }
        return ::operator new(bytes);
    }
    void put(void* p, size_t bytes) {
        if (bytes == node_size_) {
            free_.push_back(p);
        } else {
            ::operator delete(p);
        }
    }

  private:
    std::vector<void*> free_;
    size_t node_size_ = 0;
};

template <typename T>
struct recycling_allocator {
    using value_type = T;
    explicit recycling_allocator(node_recycler* r) : recycler(r) {}
    template <typename U>
    recycling_allocator(const recycling_allocator<U>& other) : recycler(other.recycler) {}
    T* allocate(size_t n) { return static_cast<T*>(recycler->get(n * sizeof(T))); }
    void deallocate(T* p, size_t n) { recycler->put(p, n * sizeof(T)); }
    template <typename U>
    bool operator==(const recycling_allocator<U>& other) const {
        return recycler == other.recycler;
    }
    node_recycler* recycler;
};

using free_block_set = std::set<free_entry, order_by_size, recycling_allocator<free_entry>>;

// Hot fields first: what the best-fit search, the merge check on a neighbour and every
// allocation and free read or write sit together, so a step touches fewer cache lines.
struct block {
    stream_handle stream = 0;  // the allocation stream
    uint64_t size = 0;
    device_address ptr = 0;
    block_pool* pool = nullptr;
    block* prev = nullptr;  // neighbours inside the same segment
    block* next = nullptr;
    expandable_segment* expandable = nullptr;
    bool allocated = false;
    bool mapped = true;   // false only for the unmapped tail of an expandable segment
    int event_count = 0;  // outstanding cross-stream events
    uint64_t requested_size = 0;
    context_handle context_when_allocated = 0;

    std::vector<stream_handle> stream_uses;  // other streams that used it (record_stream)
    // Where the block sits in its pool's free set while it is free and mapped: erasing through
    // it spares a search on every merge.
    free_block_set::iterator free_position;
    // Only meaningful on a segment's first block.
    context_handle context_when_segment_allocated = 0;
    int64_t gc_count_base = 0;  // pool's get_free_blocks_call_count when it became free

    // Links of the allocator's list of active blocks (allocated or awaiting events).
    block* active_prev = nullptr;
    block* active_next = nullptr;

    bool is_split() const { return prev != nullptr || next != nullptr; }
    void splice(block* before, block* after) {
        if (before) {
            before->next = this;
        }
        prev = before;
        if (after) {
            after->prev = this;
        }
        next = after;
    }
    void add_stream_use(stream_handle s) {
        if (std::find(stream_uses.begin(), stream_uses.end(), s) == stream_uses.end()) {
            stream_uses.push_back(s);
        }
    }
};

inline free_entry::free_entry(block* blk)
    : stream(blk->stream), size(blk->size), ptr(blk->ptr), b(blk) {}

struct order_by_address {
    bool operator()(const block* a, const block* b) const {
        if (a->stream != b->stream) {
            return a->stream < b->stream;
        }
        return a->ptr < b->ptr;
    }
};

struct block_pool {
    explicit block_pool(bool small, private_pool* owner_pool = nullptr)
        : blocks(order_by_size{}, recycling_allocator<free_entry>(&recycler)),
          is_small(small),
          owner(owner_pool) {}
    node_recycler recycler;  // before `blocks`: it must outlive the set's nodes
    free_block_set blocks;   // free, mapped
    std::set<block*, order_by_address> unmapped;  // unmapped ranges of expandable segments
    const bool is_small;
    private_pool* const owner;               // null for the default pools
    int64_t get_free_blocks_call_count = 0;  // garbage collection's clock

    void insert_into_blocks(block* b) {
        b->gc_count_base = get_free_blocks_call_count;
        b->free_position = blocks.insert(b).first;
    }
    // Puts back a block taken out by take_free (its garbage-collection age unchanged).
    void reinsert(block* b) { b->free_position = blocks.insert(b).first; }
    void erase_free(block* b) { blocks.erase(b->free_position); }
    // How many get_free_block calls ago this block became free.
    int64_t gc_count(const block* b) const {
        return static_cast<int>(get_free_blocks_call_count - b->gc_count_base);
    }
};

// A private pool (PyTorch's PrivatePool): its own small and large free-block sets, so its
// memory serves only allocations made to it, and counts that decide when it may go.
struct private_pool {
    explicit private_pool(pool_id pool_name) : id(pool_name) {}
    pool_id id;
    int use_count = 1;            // captures, MemPools and use_mem_pool scopes holding it
    int device_malloc_count = 0;  // its segments (and mapped ranges) not yet given back
    block_pool large_blocks{false, this};
    block_pool small_blocks{true, this};
};

inline pool_id owner_id(const block_pool& pool) {
    return pool.owner ? pool.owner->id : pool_id{};
}

}  // namespace memtrail::detail
