#pragma once
// Address -> block lookup for allocated blocks, consulted outside the device lock (as PyTorch
// does), so it is split into shards with a spinlock each: threads freeing different pointers
// rarely meet. Each shard is an open-addressing table with backward-shift deletion; a slot
// holds the address beside its block, so a lookup reads one cache line, not two. Every
// allocation inserts and every free takes, so those two are inline, their rare halves (a shard
// that must grow, a lock another thread holds) out of line.

#include <atomic>
#include <cstdint>
#include <memory>

#include "memtrail/core/device.hpp"

namespace memtrail::detail {

struct block;

class address_map {
  public:
    address_map();

    void insert(device_address address, block* b) {
        const uint64_t hash = mix(address);
        shard& s = shard_for(hash);
        s.lock();
        if (s.count == s.grow_at) [[unlikely]] {
            s.grow();
        }
        slot& found = s.slots[s.probe(hash, address)];
        s.count += found.key == 0 ? 1 : 0;
        found = {address, b};
        s.unlock();
    }
    // Removes and returns the block at `address`, or nullptr.
    block* take(device_address address) {
        const uint64_t hash = mix(address);
        shard& s = shard_for(hash);
        s.lock();
        block* found = s.remove(s.probe(hash, address), address);
        s.unlock();
        return found;
    }
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
        std::unique_ptr<slot[]> slots;
        size_t mask = 0;     // slot count - 1 (a power of two)
        size_t count = 0;    // occupied slots
        size_t grow_at = 0;  // the count at which it doubles: 3/4 full
        void lock() const {
            if (locked.exchange(true, std::memory_order_acquire)) [[unlikely]] {
                wait_and_lock();
            }
        }
        void wait_and_lock() const;
        void unlock() const { locked.store(false, std::memory_order_release); }
        void resize(size_t slot_count);
        void grow() { resize((mask + 1) * 2); }
        // The shard is chosen by the hash's low bits; slots use the bits above them.
        size_t slot_of(uint64_t hash) const { return (hash >> 6) & mask; }
        // The slot holding `address`, or the empty one that ends its probe chain.
        size_t probe(uint64_t hash, device_address address) const {
            size_t i = slot_of(hash);
            while (slots[i].key != 0 && slots[i].key != address) {
                i = (i + 1) & mask;
            }
            return i;
        }
        // Empties slot i when it holds `address` and returns its block (nullptr otherwise).
        block* remove(size_t i, device_address address) {
            if (slots[i].key != address) {
                return nullptr;
            }
            block* found = slots[i].value;
            // Backward-shift deletion keeps every probe chain unbroken without tombstones.
            size_t hole = i;
            for (size_t next = (hole + 1) & mask; slots[next].key != 0; next = (next + 1) & mask) {
                const size_t home = slot_of(mix(slots[next].key));
                if (((next - home) & mask) >= ((next - hole) & mask)) {
                    slots[hole] = slots[next];
                    hole = next;
                }
            }
            slots[hole] = slot{};
            --count;
            return found;
        }
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
