#include "detail/address_map.hpp"

#include <thread>
#include <utility>

namespace memtrail::detail {

namespace {
constexpr size_t initial_capacity = 64;  // a power of two
}

address_map::address_map() {
    for (auto& s : shards_) {
        s.resize(initial_capacity);
    }
}

void address_map::shard::wait_and_lock() const {
    do {
        while (locked.load(std::memory_order_relaxed)) {
            std::this_thread::yield();
        }
    } while (locked.exchange(true, std::memory_order_acquire));
}

void address_map::shard::resize(size_t slot_count) {
    std::unique_ptr<slot[]> old = std::exchange(slots, std::make_unique<slot[]>(slot_count));
    const size_t old_count = mask + 1;
    mask = slot_count - 1;
    grow_at = slot_count / 4 * 3;
    if (!old) {
        return;
    }
    for (size_t j = 0; j < old_count; ++j) {
        if (old[j].key != 0) {
            slots[probe(mix(old[j].key), old[j].key)] = old[j];
        }
    }
}

block* address_map::find(device_address address) const {
    const uint64_t hash = mix(address);
    const shard& s = shard_for(hash);
    s.lock();
    const slot& found = s.slots[s.probe(hash, address)];
    block* b = found.key == address ? found.value : nullptr;
    s.unlock();
    return b;
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
