#pragma once
// Interned stacks (return addresses, and the recorder's Python frames after them): each distinct
// list of return addresses is stored once and named by a 32-bit id. Many threads intern at once, so
// the table is split into shards chosen by the stack's hash, each with a lock for those adding to
// it; finding a stack takes no lock. Programs allocate and free from a few stacks over and over:
// each thread remembers the last stacks it interned, and finds those again without hashing them.

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

namespace memtrail::recorder {

using stack_id = uint32_t;
inline constexpr stack_id no_stack = 0;

class stack_table {
  public:
    stack_table();

    // Ids fit in 24 bits so that an id and a time share one allocator context handle.
    static constexpr stack_id max_id = (stack_id{1} << 24) - 1;

    // The id of `frames` (innermost first), added on first sight. no_stack for an empty list,
    // and when no id up to max_id is left (counted in overflow_count()). `added`, when given, is
    // set to whether this call added the stack.
    stack_id intern(std::span<const uintptr_t> frames, bool* added = nullptr);
    // The id of `frames` if it was interned already, else no_stack; adds nothing.
    stack_id find(std::span<const uintptr_t> frames);

    // The addresses of stack `id`, innermost first (empty for no_stack or an unknown id).
    std::vector<uintptr_t> frames_of(stack_id id) const;

    size_t size() const { return size_.load(std::memory_order_relaxed); }
    uint64_t overflow_count() const { return overflow_.load(std::memory_order_relaxed); }
    // Names this table among every table the process makes: never 0 and never reused, so that
    // an id remembered elsewhere (as the eh_frame walk does) is known to be this table's.
    uint64_t serial() const { return serial_; }

  private:
    static constexpr size_t shard_count = 64;

    // The per-thread cache, then the shards; adds `frames` when `add` is set.
    stack_id look_up(std::span<const uintptr_t> frames, bool add, bool& added);
    // Looks `frames` up in its shard, and adds it there when `add` is set.
    stack_id intern_in_shards(std::span<const uintptr_t> frames, bool add, bool& added);

    // A stack as interned: never changed or moved once published, so that readers compare it
    // without a lock. Its frames follow it in the same allocation.
    struct stack_node {
        uint64_t hash;
        uint32_t length;
        stack_id id;
        const uintptr_t* frames() const { return reinterpret_cast<const uintptr_t*>(this + 1); }
    };
    struct node_deleter {
        void operator()(stack_node* node) const;
    };
    // A shard's open-addressed slots (nullptr: empty), as readers probe them. A grown table is
    // published whole; the one before it stays, owned by it, for readers still probing it.
    struct slot_table {
        explicit slot_table(size_t count);
        size_t mask;
        std::unique_ptr<std::atomic<const stack_node*>[]> slots;
        std::unique_ptr<slot_table> previous;
    };

    // Cache-line aligned: threads hammering neighbouring shards do not share lines. Readers
    // probe `table` without the mutex; writers hold it.
    struct alignas(64) shard {
        std::atomic<slot_table*> table{nullptr};
        mutable std::mutex mutex;
        std::vector<std::unique_ptr<stack_node, node_deleter>> stacks;  // local index -> stack
        std::unique_ptr<slot_table> owned;  // what `table` points to, and the older ones

        // The id of `frames` (hashed as `hash`) if the table holds it, else no_stack.
        static stack_id find_in(const slot_table& table, uint64_t hash,
                                std::span<const uintptr_t> frames);
        // Doubles the slot table, keeping the load at or under one half (under the mutex).
        void grow();
    };

    std::array<shard, shard_count> shards_;
    // Names this table in the threads' remembered stacks, never reused (an address could be).
    const uint64_t serial_;
    std::atomic<size_t> size_{0};
    std::atomic<uint64_t> overflow_{0};
};

}  // namespace memtrail::recorder
