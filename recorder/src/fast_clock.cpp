#include "detail/fast_clock.hpp"

#include <atomic>
#include <chrono>
#include <mutex>

#if defined(__x86_64__)
#include <x86intrin.h>
#endif

namespace memtrail::recorder::detail {

int64_t system_now_ns() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
}

#if defined(__x86_64__)

namespace {

__extension__ typedef unsigned __int128 uint128;  // a 64 x 64 bit product, in one instruction

constexpr int64_t recalibrate_after_ns = 1'000'000'000;
constexpr int64_t first_calibration_after_ns = 20'000'000;

// One calibration: time = base_ns + (tsc - base_tsc) * ns_per_tick_q32 / 2^32: one multiply
// instead of two conversions to and from double and a multiply (a read measured 25.0 ns against
// 26.9 on an H100 host, where `rdtsc` alone takes about 21).
struct calibration {
    uint64_t base_tsc;
    int64_t base_ns;
    uint64_t ns_per_tick_q32;  // 0 until the first measurement
};

// The current calibration, published under a sequence lock so readers never see half of one
// and half of another (the fields are atomics so the lock-free reads are well defined). One
// line with its sequence: inside training it is cold at every read.
struct alignas(64) published_calibration {
    std::atomic<uint32_t> sequence{0};
    std::atomic<uint64_t> base_tsc{0};
    std::atomic<int64_t> base_ns{0};
    std::atomic<uint64_t> ns_per_tick_q32{0};
    calibration load() const {
        return {base_tsc.load(std::memory_order_relaxed), base_ns.load(std::memory_order_relaxed),
                ns_per_tick_q32.load(std::memory_order_relaxed)};
    }
    void store(const calibration& c) {
        base_tsc.store(c.base_tsc, std::memory_order_relaxed);
        base_ns.store(c.base_ns, std::memory_order_relaxed);
        ns_per_tick_q32.store(c.ns_per_tick_q32, std::memory_order_relaxed);
    }
};

class tsc_clock {
  public:
    tsc_clock() : start_tsc_(__rdtsc()), start_ns_(system_now_ns()) {
        current_.store({start_tsc_, start_ns_, 0});
    }

    int64_t now() {
        calibration c;
        uint32_t seq;
        do {
            seq = current_.sequence.load(std::memory_order_acquire);
            c = current_.load();
            std::atomic_thread_fence(std::memory_order_acquire);
        } while ((seq & 1) != 0 || seq != current_.sequence.load(std::memory_order_relaxed));
        if (c.ns_per_tick_q32 == 0) {
            return first_calibration();
        }
        // Read after the calibration, so the counter is past its base (cores share the counter).
        const uint64_t tsc = __rdtsc();
        const uint64_t ticks = tsc > c.base_tsc ? tsc - c.base_tsc : 0;
        const int64_t ns = c.base_ns + static_cast<int64_t>(
                                           (static_cast<uint128>(ticks) * c.ns_per_tick_q32) >> 32);
        if (ns - c.base_ns > recalibrate_after_ns) {
            recalibrate(c);
        }
        return ns;
    }

  private:
    // Until the counter's rate is known, the system clock answers.
    int64_t first_calibration() {
        const int64_t ns = system_now_ns();
        if (ns - start_ns_ >= first_calibration_after_ns) {
            std::unique_lock lock(update_, std::try_to_lock);
            if (lock.owns_lock() && current_.ns_per_tick_q32.load(std::memory_order_relaxed) == 0) {
                publish({start_tsc_, start_ns_, 0});
            }
        }
        return ns;
    }

    void recalibrate(const calibration& seen) {
        std::unique_lock lock(update_, std::try_to_lock);
        if (!lock.owns_lock() ||
            current_.base_tsc.load(std::memory_order_relaxed) != seen.base_tsc) {
            return;  // another thread is at it, or has done it
        }
        publish(seen);
    }

    // Measures the rate since `from` and makes now the new base.
    void publish(const calibration& from) {
        const uint64_t tsc = __rdtsc();
        const int64_t ns = system_now_ns();
        if (tsc <= from.base_tsc) {
            return;
        }
        const double rate =
            static_cast<double>(ns - from.base_ns) / static_cast<double>(tsc - from.base_tsc);
        const double rate_q32 = rate * 4294967296.0;
        if (!(rate_q32 >= 1.0 && rate_q32 < 1e18)) {
            return;  // the system clock went backwards, or the counter is unusable
        }
        current_.sequence.fetch_add(1, std::memory_order_acq_rel);
        current_.store({tsc, ns, static_cast<uint64_t>(rate_q32)});
        current_.sequence.fetch_add(1, std::memory_order_release);
    }

    published_calibration current_;
    const uint64_t start_tsc_;
    const int64_t start_ns_;
    std::mutex update_;
};

}  // namespace

int64_t fast_now_ns() {
    static tsc_clock clock;
    return clock.now();
}

#else

int64_t fast_now_ns() {
    return system_now_ns();
}

#endif

}  // namespace memtrail::recorder::detail
