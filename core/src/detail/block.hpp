#pragma once
// Blocks and pools: the allocator's bookkeeping, laid out as in PyTorch so that the same
// sequence of requests walks the same ordered sets and makes the same choices.

#include <algorithm>
#include <cstdint>
#include <set>
#include <vector>

#include "detail/free_block_index.hpp"
#include "memtrail/core/caching_allocator.hpp"

namespace memtrail::detail {

struct block_pool;
struct private_pool;
class expandable_segment;

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
    // Only meaningful on a segment's first block.
    context_handle context_when_segment_allocated = 0;
    int64_t gc_count_base = 0;  // pool's get_free_blocks_call_count when it became free

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
        : is_small(small), owner(owner_pool) {}
    free_block_index blocks;                      // free, mapped
    std::set<block*, order_by_address> unmapped;  // unmapped ranges of expandable segments
    const bool is_small;
    private_pool* const owner;               // null for the default pools
    int64_t get_free_blocks_call_count = 0;  // garbage collection's clock

    void insert_into_blocks(block* b) {
        b->gc_count_base = get_free_blocks_call_count;
        blocks.insert(b);
    }
    // Puts back a block taken out by take_free (its garbage-collection age unchanged).
    void reinsert(block* b) { blocks.insert(b); }
    void erase_free(const block* b) { blocks.erase(b->stream, b->size, b->ptr); }
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
