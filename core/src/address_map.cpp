#include "detail/address_map.hpp"

#include <thread>

namespace memtrail::detail {

namespace {
constexpr size_t initial_capacity = 64;  // a power of two
}

address_map::address_map() {
    for (auto& s : shards_) {
        s.slots.assign(initial_capacity, slot{});
    }
}

void address_map::shard::lock() const {
    while (locked.exchange(true, std::memory_order_acquire)) {
        while (locked.load(std::memory_order_relaxed)) {
            std::this_thread::yield();
        }
    }
}

void address_map::shard::grow() {
    std::vector<slot> old(slots.size() * 2);
    old.swap(slots);
    const size_t mask = slots.size() - 1;
    for (const slot& entry : old) {
        if (entry.key == 0) {
            continue;
        }
        size_t i = slot_of(mix(entry.key));
        while (slots[i].key != 0) {
            i = (i + 1) & mask;
        }
        slots[i] = entry;
    }
}

void address_map::insert(device_address address, block* b) {
    const uint64_t hash = mix(address);
    shard& s = shard_for(hash);
    s.lock();
    if ((s.count + 1) * 4 > s.slots.size() * 3) {
        s.grow();
    }
    const size_t mask = s.slots.size() - 1;
    size_t i = s.slot_of(hash);
    while (s.slots[i].key != 0 && s.slots[i].key != address) {
        i = (i + 1) & mask;
    }
    if (s.slots[i].key == 0) {
        ++s.count;
    }
    s.slots[i] = {address, b};
    s.unlock();
}

block* address_map::take(device_address address) {
    const uint64_t hash = mix(address);
    shard& s = shard_for(hash);
    s.lock();
    const size_t mask = s.slots.size() - 1;
    size_t i = s.slot_of(hash);
    while (s.slots[i].key != 0 && s.slots[i].key != address) {
        i = (i + 1) & mask;
    }
    block* found = nullptr;
    if (s.slots[i].key == address) {
        found = s.slots[i].value;
        // Backward-shift deletion keeps every probe chain unbroken without tombstones.
        size_t hole = i;
        size_t next = (hole + 1) & mask;
        while (s.slots[next].key != 0) {
            const size_t home = s.slot_of(mix(s.slots[next].key));
            const bool movable = ((next - home) & mask) >= ((next - hole) & mask);
            if (movable) {
                s.slots[hole] = s.slots[next];
                hole = next;
            }
            next = (next + 1) & mask;
        }
        s.slots[hole] = slot{};
        --s.count;
    }
    s.unlock();
    return found;
}

block* address_map::find(device_address address) const {
    const uint64_t hash = mix(address);
    const shard& s = shard_for(hash);
    s.lock();
    const size_t mask = s.slots.size() - 1;
    size_t i = s.slot_of(hash);
    while (s.slots[i].key != 0 && s.slots[i].key != address) {
        i = (i + 1) & mask;
    }
    block* found = s.slots[i].key == address ? s.slots[i].value : nullptr;
    s.unlock();
    return found;
}

size_t address_map::size() const {
    size_t total = 0;
    for (const auto& s : shards_) {
        s.lock();
        total += s.count;
        s.unlock();
    }
    return total;
}

}  // namespace memtrail::detail
