#pragma once
// Address -> block lookup for allocated blocks, consulted outside the device lock (as PyTorch
// does), so it is split into shards with a spinlock each: threads freeing different pointers
// rarely meet. Each shard is an open-addressing table with backward-shift deletion; a slot
// holds the address beside its block, so a lookup reads one cache line, not two.

#include <atomic>
#include <cstdint>
#include <vector>

#include "memtrail/core/device.hpp"

namespace memtrail::detail {

struct block;

class address_map {
  public:
    address_map();

    void insert(device_address address, block* b);
    // Removes and returns the block at `address`, or nullptr.
    block* take(device_address address);
    block* find(device_address address) const;
    size_t size() const;

  private:
    static constexpr size_t shard_count = 64;
    struct slot {
        device_address key = 0;  // 0 = empty (addresses are never 0)
        block* value = nullptr;
    };
    struct alignas(64) shard {
        mutable std::atomic<bool> locked{false};
        std::vector<slot> slots;
        size_t count = 0;
        void lock() const;
        void unlock() const { locked.store(false, std::memory_order_release); }
        void grow();
        // The shard is chosen by the hash's low bits; slots use the bits above them.
        size_t slot_of(uint64_t hash) const { return (hash >> 6) & (slots.size() - 1); }
    };
    static uint64_t mix(device_address a) {
        a ^= a >> 33;
        a *= 0xff51afd7ed558ccdull;
        a ^= a >> 33;
        return a;
    }
    shard& shard_for(uint64_t hash) { return shards_[hash % shard_count]; }
    const shard& shard_for(uint64_t hash) const { return shards_[hash % shard_count]; }
    shard shards_[shard_count];
};

}  // namespace memtrail::detail
