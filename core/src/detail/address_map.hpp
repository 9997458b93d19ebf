#pragma once
// Address -> block lookup for allocated blocks. Every access holds the device's lock: an
// allocation inserts its block before it unlocks, a free takes it out after it locks, so a double
// free is still told apart (one of two frees finds the block, the other does not), and neither
// takes a lock of its own (the lock and unlock of a sharded map cost about a third of a cached
// allocation and free). An open-addressing table with backward-shift deletion; a slot holds the
// address beside its block, so a lookup reads one cache line, not two.

#include <cstdint>
#include <memory>

#include "memtrail/core/device.hpp"

namespace memtrail::detail {

struct block;

class address_map {
  public:
    address_map();

    void insert(device_address address, block* b) {
        if (count_ == grow_at_) [[unlikely]] {
            grow();
        }
        slot& found = slots_[probe(address)];
        count_ += found.key == 0 ? 1 : 0;
        found = {address, b};
    }
    // Removes and returns the block at `address`, or nullptr.
    block* take(device_address address) {
        const size_t i = probe(address);
        if (slots_[i].key != address) {
            return nullptr;
        }
        block* found = slots_[i].value;
        // Backward-shift deletion keeps every probe chain unbroken without tombstones.
        size_t hole = i;
        for (size_t next = (hole + 1) & mask_; slots_[next].key != 0; next = (next + 1) & mask_) {
            const size_t home = slot_of(slots_[next].key);
            if (((next - home) & mask_) >= ((next - hole) & mask_)) {
                slots_[hole] = slots_[next];
                hole = next;
            }
        }
        slots_[hole] = slot{};
        --count_;
        return found;
    }
    block* find(device_address address) const {
        const slot& found = slots_[probe(address)];
        return found.key == address ? found.value : nullptr;
    }
    size_t size() const { return count_; }
    // Applies f to every block in the map, in no particular order.
    template <typename F>
    void for_each(F f) const {
        for (size_t i = 0; i <= mask_; ++i) {
            if (slots_[i].key != 0) {
                f(slots_[i].value);
            }
        }
    }

  private:
    struct slot {
        device_address key = 0;  // 0 = empty (addresses are never 0)
        block* value = nullptr;
    };
    static uint64_t mix(device_address a) {
        a ^= a >> 33;
        a *= 0xff51afd7ed558ccdull;
        a ^= a >> 33;
        return a;
    }
    size_t slot_of(device_address address) const { return mix(address) & mask_; }
    // The slot holding `address`, or the empty one that ends its probe chain.
    size_t probe(device_address address) const {
        size_t i = slot_of(address);
        while (slots_[i].key != 0 && slots_[i].key != address) {
            i = (i + 1) & mask_;
        }
        return i;
    }
    [[gnu::noinline]] void grow();
    void resize(size_t slot_count);

    std::unique_ptr<slot[]> slots_;
    size_t mask_ = 0;     // slot count - 1 (a power of two)
    size_t count_ = 0;    // occupied slots
    size_t grow_at_ = 0;  // the count at which it doubles: half full, for short probe chains
};

}  // namespace memtrail::detail
