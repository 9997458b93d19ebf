#include "detail/address_map.hpp"

#include <utility>

namespace memtrail::detail {

namespace {
constexpr size_t initial_capacity = 4096;  // a power of two: 64 KiB, as many slots as 64 shards had
}

address_map::address_map() {
    resize(initial_capacity);
}

void address_map::grow() {
    resize((mask_ + 1) * 2);
}

void address_map::resize(size_t slot_count) {
    std::unique_ptr<slot[]> old = std::exchange(slots_, std::make_unique<slot[]>(slot_count));
    const size_t old_count = old ? mask_ + 1 : 0;
    mask_ = slot_count - 1;
    grow_at_ = slot_count / 2;
    for (size_t j = 0; j < old_count; ++j) {
        if (old[j].key != 0) {
            slots_[probe(old[j].key)] = old[j];
        }
    }
}

}  // namespace memtrail::detail
