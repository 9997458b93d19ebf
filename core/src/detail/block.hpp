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
class expandable_segment;

struct block {
    stream_handle stream = 0;    // the allocation stream
    uint64_t size = 0;
    uint64_t requested_size = 0;
    block_pool* pool = nullptr;
    device_address ptr = 0;
    bool allocated = false;
    bool mapped = true;          // false only for the unmapped tail of an expandable segment
    block* prev = nullptr;       // neighbours inside the same segment
    block* next = nullptr;
    int event_count = 0;         // outstanding cross-stream events
    int64_t gc_count_base = 0;   // pool's get_free_blocks_call_count when it became free
    std::vector<stream_handle> stream_uses;  // other streams that used it (record_stream)
    context_handle context_when_allocated = 0;
    context_handle context_when_segment_allocated = 0;  // only meaningful on a segment's first block
    expandable_segment* expandable = nullptr;
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

// PyTorch orders free blocks by (stream, size, address): a lower_bound is the best fit.
struct order_by_size {
    bool operator()(const block* a, const block* b) const {
        if (a->stream != b->stream) {
            return a->stream < b->stream;
        }
        if (a->size != b->size) {
            return a->size < b->size;
        }
        return a->ptr < b->ptr;
    }
};

struct order_by_address {
    bool operator()(const block* a, const block* b) const {
        if (a->stream != b->stream) {
            return a->stream < b->stream;
        }
        return a->ptr < b->ptr;
    }
};

struct block_pool {
    explicit block_pool(bool small) : is_small(small) {}
    std::set<block*, order_by_size> blocks;        // free, mapped blocks
    std::set<block*, order_by_address> unmapped;   // unmapped ranges of expandable segments
    const bool is_small;
    int64_t get_free_blocks_call_count = 0;        // garbage collection's clock

    void insert_into_blocks(block* b) {
        b->gc_count_base = get_free_blocks_call_count;
        blocks.insert(b);
    }
    // How many get_free_block calls ago this block became free.
    int64_t gc_count(const block* b) const {
        return static_cast<int>(get_free_blocks_call_count - b->gc_count_base);
    }
};

}  // namespace memtrail::detail
