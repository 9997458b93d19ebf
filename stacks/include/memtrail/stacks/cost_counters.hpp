#pragma once
// Cost counters: where recording spends its time, in TSC ticks and counts per part, for
// diagnosis (docs/performance-log measured its rounds with them). Built only with the CMake option
// MEMTRAIL_COST_COUNTERS=ON; without it a zone is an empty type and a count an empty inline
// function, so that the zones left in the code compile to nothing (static_assert below).
//
// With it, each thread adds to a block of counters of its own (no line shared between threads: a
// zone's bookkeeping costs a few ns, not a transfer of a line between cores); the blocks are
// listed once and summed at exit into MEMTRAIL_COST_COUNTERS_FILE.<pid> (a CMake cache value),
// which bench/support/cost_counters_summary.py turns into nanoseconds per event.

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <type_traits>

#ifndef MEMTRAIL_COST_COUNTERS
#define MEMTRAIL_COST_COUNTERS 0
#endif

#if MEMTRAIL_COST_COUNTERS
#include <unistd.h>
#include <x86intrin.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <string>
#endif

namespace memtrail::cost {

// What is counted: ticks spent in a part (zones), then plain counts. The names are what the
// file says and what cost_counters_summary.py reads.
enum class counter : uint8_t {
    capture_context,  // ticks: the whole capture of a call's context
    native,           // ticks: the native stack walk
    choose,           // ticks: the eh_frame walk choosing a kept walk to start from
    loop,             // ticks: the eh_frame walk's own steps
    keep,             // ticks: keeping the walk for the next capture
    intern_native,    // ticks: interning a native stack not taken from the kept walk
    py_ctor,          // ticks: finding the thread's Python frames
    py_read,          // ticks: reading the Python frames without checks
    py_find,          // ticks: looking a native+Python stack up
    py_slow,          // ticks: reading and checking the Python frames, then interning
    clock,            // ticks: the call's time
    on_event,         // ticks: the allocator's event into the trace
    push,             // ticks: the trace ring's push
    alloc_total,      // ticks: a recorded allocation, context and allocator
    free_total,       // ticks: a recorded free, context and allocator
    events_ctx,       // contexts captured
    on_event_calls,   // events recorded
    native_frames,    // native frames written
    walks,            // eh_frame walks
    fresh,            // frames the walks stepped
    shared,           // frames the walks took from their kept walk
    choose_hit,       // walks whose innermost frame was kept
    walk_whole,       // walks taken whole from the kept walk
    fallback,         // walks deeper than a kept walk holds
    whole,            // native stacks taken from the kept walk, not interned again
    py_words,         // Python words read
    py_cached,        // native+Python stacks taken from the kept walk
    find_hit,         // native+Python stacks found by lookup
    find_miss,        // native+Python stacks not found by lookup
    count_of_counters
};

inline constexpr const char* counter_names[] = {
    "capture_context", "native",         "choose",        "loop",        "keep",
    "intern_native",   "py_ctor",        "py_read",       "py_find",     "py_slow",
    "clock",           "on_event",       "push",          "alloc_total", "free_total",
    "events_ctx",      "on_event_calls", "native_frames", "walks",       "fresh",
    "shared",          "choose_hit",     "walk_whole",    "fallback",    "whole",
    "py_words",        "py_cached",      "find_hit",      "find_miss"};
static_assert(std::size(counter_names) == static_cast<size_t>(counter::count_of_counters),
              "a name for every counter");

inline constexpr bool built = MEMTRAIL_COST_COUNTERS != 0;

#if MEMTRAIL_COST_COUNTERS

inline constexpr size_t counter_count = static_cast<size_t>(counter::count_of_counters);

struct thread_counters {
    std::array<std::atomic<uint64_t>, counter_count> values{};
    thread_counters* next = nullptr;
};

// Every thread's block (never freed: a block outlives its thread, to be summed at exit).
struct all_counters {
    std::atomic<thread_counters*> threads{nullptr};
    uint64_t start_ticks = __rdtsc();
    std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();

    uint64_t sum(counter c) const {
        uint64_t total = 0;
        for (thread_counters* t = threads.load(); t != nullptr; t = t->next) {
            total += t->values[static_cast<size_t>(c)].load(std::memory_order_relaxed);
        }
        return total;
    }
    // "ns_per_tick <ns>", then "<name> <sum>" a line for each counter.
    bool write(const std::string& path) const {
        FILE* file = std::fopen(path.c_str(), "w");
        if (file == nullptr) {
            return false;
        }
        const double ns =
            std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - start)
                .count();
        std::fprintf(file, "ns_per_tick %.6f\n", ns / static_cast<double>(__rdtsc() - start_ticks));
        for (size_t i = 0; i < counter_count; ++i) {
            std::fprintf(file, "%s %llu\n", counter_names[i],
                         static_cast<unsigned long long>(sum(static_cast<counter>(i))));
        }
        return std::fclose(file) == 0;
    }
    ~all_counters() {
#ifdef MEMTRAIL_COST_COUNTERS_FILE
        const std::string path =
            std::string(MEMTRAIL_COST_COUNTERS_FILE) + "." + std::to_string(getpid());
        if (!write(path)) {
            std::fprintf(stderr, "memtrail: cannot write the cost counters to %s\n", path.c_str());
        }
#endif
    }
};

inline all_counters& counters() {
    static all_counters all;
    return all;
}

inline thread_counters& this_threads_counters() {
    thread_local thread_counters* const mine = [] {
        auto* block = new thread_counters;
        all_counters& all = counters();
        block->next = all.threads.load();
        while (!all.threads.compare_exchange_weak(block->next, block)) {
        }
        return block;
    }();
    return *mine;
}

inline void add(counter c, uint64_t n) {
    std::atomic<uint64_t>& value = this_threads_counters().values[static_cast<size_t>(c)];
    value.store(value.load(std::memory_order_relaxed) + n,
                std::memory_order_relaxed);  // one writer
}

// Adds the ticks from its making to its end to `c`.
class zone {
  public:
    explicit zone(counter c) : counter_(c) {}
    zone(const zone&) = delete;
    zone& operator=(const zone&) = delete;
    ~zone() { add(counter_, __rdtsc() - start_); }

  private:
    counter counter_;
    uint64_t start_ = __rdtsc();
};

// The ticks since its making: for a part that ends before its scope does.
class stopwatch {
  public:
    uint64_t ticks() const { return __rdtsc() - start_; }

  private:
    uint64_t start_ = __rdtsc();
};

#else

inline void add(counter, uint64_t) {}

class stopwatch {
  public:
    constexpr uint64_t ticks() const { return 0; }
};
static_assert(std::is_empty_v<stopwatch>, "without MEMTRAIL_COST_COUNTERS a stopwatch is nothing");

class zone {
  public:
    explicit zone(counter) {}
    zone(const zone&) = delete;
    zone& operator=(const zone&) = delete;
};
static_assert(std::is_empty_v<zone> && std::is_trivially_destructible_v<zone>,
              "without MEMTRAIL_COST_COUNTERS a zone is nothing");

#endif

// What the eh_frame walker counts of a walk that stepped (nothing when the counters are off).
inline void add_stepped_walk(uint64_t ticks, uint64_t fresh, uint64_t shared) {
    add(counter::loop, ticks);
    add(counter::walks, 1);
    add(counter::fresh, fresh);
    add(counter::shared, shared);
    add(counter::walk_whole, fresh == 0 ? 1 : 0);
}

// What `f` returns, its ticks added to `c`: for a zone around one expression. Not around a stack
// walk whose frames are counted (`f` may be a frame of its own).
template <typename F>
[[gnu::always_inline]] inline decltype(auto) timed(counter c, F&& f) {
    const zone timing(c);
    return f();
}

}  // namespace memtrail::cost
