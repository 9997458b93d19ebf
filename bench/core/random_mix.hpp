#pragma once
// The allocator benchmarks' random mix: 1000 live slots of log-uniform sizes from 512 B to
// 64 MiB; each step frees a random slot and allocates the next size of a fixed sequence into it.

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "memtrail/core/caching_allocator.hpp"

namespace memtrail::bench {

class random_mix {
  public:
    static constexpr size_t slots = 1000;

    // Fills every slot; `seed` picks the sizes and the slots freed.
    random_mix(device_allocator& allocator, stream_handle stream, uint64_t seed)
        : allocator_(allocator), stream_(stream), rng_(seed), live_(slots, 0), sizes_(1 << 16) {
        std::uniform_real_distribution<double> exponent(9.0, 26.0);  // 512 B .. 64 MiB
        for (auto& s : sizes_) {
            s = static_cast<uint64_t>(std::exp2(exponent(rng_)));
        }
        for (size_t i = 0; i < slots; ++i) {
            live_[i] = allocator_.allocate(sizes_[i], stream_);
        }
    }
    random_mix(const random_mix&) = delete;
    random_mix& operator=(const random_mix&) = delete;
    ~random_mix() {
        for (device_address p : live_) {
            allocator_.free(p);
        }
    }

    void step() {
        const size_t slot = rng_() % slots;
        allocator_.free(live_[slot]);
        live_[slot] = allocator_.allocate(sizes_[next_++ & (sizes_.size() - 1)], stream_);
    }

  private:
    device_allocator& allocator_;
    const stream_handle stream_;
    std::mt19937_64 rng_;
    std::vector<device_address> live_;
    std::vector<uint64_t> sizes_;
    size_t next_ = 0;
};

}  // namespace memtrail::bench
