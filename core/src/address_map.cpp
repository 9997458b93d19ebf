#include "detail/address_map.hpp"

#include <thread>

namespace memtrail::detail {

namespace {
constexpr size_t initial_capacity = 64;  // a power of two
}

address_map::address_map() {
    for (auto& s : shards_) {
        s.keys.assign(initial_capacity, 0);
        s.values.assign(initial_capacity, nullptr);
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
    std::vector<device_address> old_keys(keys.size() * 2, 0);
    std::vector<block*> old_values(keys.size() * 2, nullptr);
    old_keys.swap(keys);
    old_values.swap(values);
    const size_t mask = keys.size() - 1;
    for (size_t i = 0; i < old_keys.size(); ++i) {
        if (old_keys[i] == 0) {
            continue;
        }
        size_t slot = slot_of(mix(old_keys[i]));
        while (keys[slot] != 0) {
            slot = (slot + 1) & mask;
        }
        keys[slot] = old_keys[i];
        values[slot] = old_values[i];
    }
}

void address_map::insert(device_address address, block* b) {
    const uint64_t hash = mix(address);
    shard& s = shard_for(hash);
    s.lock();
    if ((s.count + 1) * 4 > s.keys.size() * 3) {
        s.grow();
    }
    const size_t mask = s.keys.size() - 1;
    size_t slot = s.slot_of(hash);
    while (s.keys[slot] != 0 && s.keys[slot] != address) {
        slot = (slot + 1) & mask;
    }
    if (s.keys[slot] == 0) {
        ++s.count;
    }
    s.keys[slot] = address;
    s.values[slot] = b;
    s.unlock();
}

block* address_map::take(device_address address) {
    const uint64_t hash = mix(address);
    shard& s = shard_for(hash);
    s.lock();
    const size_t mask = s.keys.size() - 1;
    size_t slot = s.slot_of(hash);
    while (s.keys[slot] != 0 && s.keys[slot] != address) {
        slot = (slot + 1) & mask;
    }
    block* found = nullptr;
    if (s.keys[slot] == address) {
        found = s.values[slot];
        // Backward-shift deletion keeps every probe chain unbroken without tombstones.
        size_t hole = slot;
        size_t next = (hole + 1) & mask;
        while (s.keys[next] != 0) {
            const size_t home = s.slot_of(mix(s.keys[next]));
            const bool movable = ((next - home) & mask) >= ((next - hole) & mask);
            if (movable) {
                s.keys[hole] = s.keys[next];
                s.values[hole] = s.values[next];
                hole = next;
            }
            next = (next + 1) & mask;
        }
        s.keys[hole] = 0;
        s.values[hole] = nullptr;
        --s.count;
    }
    s.unlock();
    return found;
}

block* address_map::find(device_address address) const {
    const uint64_t hash = mix(address);
    const shard& s = shard_for(hash);
    s.lock();
    const size_t mask = s.keys.size() - 1;
    size_t slot = s.slot_of(hash);
    while (s.keys[slot] != 0 && s.keys[slot] != address) {
        slot = (slot + 1) & mask;
    }
    block* found = s.keys[slot] == address ? s.values[slot] : nullptr;
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
