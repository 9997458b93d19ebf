#pragma once
// An unordered map from addresses to values in one flat table (open addressing, linear probing),
// for the walk back over the whole trace that finds the blocks live before it: one probe of
// contiguous memory per entry where a node-based map allocates and chases a pointer.

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace memtrail::analysis::detail {

template <class T>
class address_hash_map {
  public:
    address_hash_map() { rehash(min_capacity); }

    size_t size() const { return size_; }

    // The value of `key`, nullptr when absent.
    T* find(uint64_t key) {
        const size_t at = index_of(key);
        return slots_[at].used ? &slots_[at].value : nullptr;
    }

    // The value of `key`, default-constructed when absent.
    T& operator[](uint64_t key) {
        if (2 * (size_ + 1) > slots_.size()) {
            rehash(2 * slots_.size());
        }
        slot& s = slots_[index_of(key)];
        if (!s.used) {
            s = slot{key, true, T{}};
            ++size_;
        }
        return s.value;
    }

    void erase(uint64_t key) {
        size_t hole = index_of(key);
        if (!slots_[hole].used) {
            return;
        }
        // Backward-shift deletion: later items of the probe run move into the hole when their
        // home position allows it, so lookups never need tombstones.
        for (size_t next = (hole + 1) & mask_; slots_[next].used; next = (next + 1) & mask_) {
            const size_t home = home_of(slots_[next].key);
            if (((next - home) & mask_) >= ((next - hole) & mask_)) {
                slots_[hole] = slots_[next];
                hole = next;
            }
        }
        slots_[hole].used = false;
        --size_;
    }

    // Calls visit(key, value) for every item, in no particular order.
    template <class Visit>
    void for_each(Visit&& visit) const {
        for (const slot& s : slots_) {
            if (s.used) {
                visit(s.key, s.value);
            }
        }
    }

  private:
    struct slot {
        uint64_t key = 0;
        bool used = false;
        T value{};
    };
    static constexpr size_t min_capacity = 1024;

    // Fibonacci hashing: addresses are aligned, so their low bits carry nothing.
    size_t home_of(uint64_t key) const {
        return static_cast<size_t>((key * 0x9e3779b97f4a7c15ull) >> shift_);
    }

    // The slot holding `key`, or the empty slot where it would go.
    size_t index_of(uint64_t key) const {
        size_t at = home_of(key);
        while (slots_[at].used && slots_[at].key != key) {
            at = (at + 1) & mask_;
        }
        return at;
    }

    void rehash(size_t capacity) {
        std::vector<slot> old = std::move(slots_);
        slots_.assign(capacity, slot{});
        mask_ = capacity - 1;
        shift_ = 64;
        for (size_t c = capacity; c > 1; c /= 2) {
            --shift_;
        }
        for (const slot& s : old) {
            if (s.used) {
                slots_[index_of(s.key)] = s;
            }
        }
    }

    std::vector<slot> slots_;  // a power of two, at most half full
    size_t size_ = 0;
    size_t mask_ = 0;
    int shift_ = 64;  // 64 - log2(capacity)
};

}  // namespace memtrail::analysis::detail
