#pragma once
// Blocks come and go on every split and merge: recycle them instead of new/delete. Inline, since
// a cached allocation that splits makes one and a free that merges recycles one.

#include <vector>

#include "detail/block.hpp"

namespace memtrail::detail {

class block_arena {
  public:
    block_arena() = default;
    block_arena(const block_arena&) = delete;
    block_arena& operator=(const block_arena&) = delete;
    ~block_arena() {
        for (block* b : free_) {
            delete b;
        }
    }

    block* make(stream_handle stream, uint64_t size, block_pool* pool, device_address ptr) {
        block* b;
        if (free_.empty()) [[unlikely]] {
            b = new block();
        } else {
            // Recycled blocks were reset by recycle(); only the identity fields change here.
            b = free_.back();
            free_.pop_back();
        }
        b->stream = stream;
        b->size = size;
        b->requested_size = 0;
        b->pool = pool;
        b->ptr = ptr;
        b->allocated = false;
        b->mapped = true;
        b->prev = b->next = nullptr;
        b->event_count = 0;
        b->gc_count_base = 0;
        b->context_when_allocated = b->context_when_segment_allocated = 0;
        b->expandable = nullptr;
        return b;
    }

    void recycle(block* b) {
        b->stream_uses.clear();  // keeps its capacity for the next user
        free_.push_back(b);
    }

  private:
    std::vector<block*> free_;
};

}  // namespace memtrail::detail
