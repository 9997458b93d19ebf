#include "detail/fork_gate.hpp"

#include <pthread.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <thread>

namespace memtrail::recorder::librecorder {

namespace {

// Threads inside memtrail, spread over counters so that threads on other counters share no
// cache line.
struct alignas(64) inside_counter {
    std::atomic<uint32_t> threads{0};
};
constexpr size_t counter_count = 64;
std::array<inside_counter, counter_count> inside;
std::atomic<bool> forking{false};
// Set in a child forked while another thread was still inside memtrail.
std::atomic<bool> unusable_child{false};
std::atomic<bool> unusable_said{false};
// How long prepare waits for the threads inside to leave before it lets the fork go on.
constexpr auto most_wait = std::chrono::seconds(2);

std::atomic<uint32_t> next_counter{0};
// Trivially destructible, so still valid in calls made while the thread is torn down.
thread_local uint32_t my_counter = UINT32_MAX;
thread_local uint32_t my_depth = 0;  // this thread's nesting of gate scopes
thread_local bool forking_thread_inside = false;

inside_counter& counter_of_this_thread() {
    if (my_counter == UINT32_MAX) {
        my_counter = next_counter.fetch_add(1, std::memory_order_relaxed) % counter_count;
    }
    return inside[my_counter];
}

void prepare() {
    forking.store(true, std::memory_order_seq_cst);
    // Threads that entered before `forking` was raised leave; those after see it and wait.
    // The forking thread may be inside itself (a fork from a callback): its own count stays.
    const uint32_t mine = my_depth > 0 ? 1 : 0;
    const auto deadline = std::chrono::steady_clock::now() + most_wait;
    for (size_t c = 0; c < counter_count; ++c) {
        const uint32_t own = (my_counter == c) ? mine : 0;
        while (inside[c].threads.load(std::memory_order_seq_cst) != own) {
            if (std::chrono::steady_clock::now() > deadline) {
                unusable_child.store(true, std::memory_order_relaxed);
                return;
            }
            std::this_thread::yield();
        }
    }
    forking_thread_inside = mine != 0;
}

void in_parent() {
    unusable_child.store(false, std::memory_order_relaxed);
    forking.store(false, std::memory_order_seq_cst);
}

void in_child() {
    // The other threads are gone; their counts were zero unless prepare gave up waiting.
    if (!unusable_child.load(std::memory_order_relaxed)) {
        for (size_t c = 0; c < counter_count; ++c) {
            inside[c].threads.store(0, std::memory_order_relaxed);
        }
        if (forking_thread_inside) {
            inside[my_counter].threads.store(1, std::memory_order_relaxed);
        }
    }
    forking.store(false, std::memory_order_seq_cst);
}

void install_handlers_once() {
    static const int installed = ::pthread_atfork(prepare, in_parent, in_child);
    if (installed != 0) {
        std::fprintf(stderr,
                     "memtrail: cannot install fork handlers (error %d): a child forked "
                     "while memtrail is in use may hang\n",
                     installed);
    }
}

[[noreturn]] void refuse_in_unusable_child() {
    constexpr const char* why =
        "memtrail: this process was forked while another thread was inside memtrail, which may "
        "have held its locks: memtrail records nothing in it";
    if (!unusable_said.exchange(true)) {
        std::fprintf(stderr, "%s (pid %d)\n", why, static_cast<int>(::getpid()));
    }
    throw forked_child_error(why);
}

}  // namespace

fork_gate_scope::fork_gate_scope() {
    if (my_depth++ > 0) {
        return;  // nested: counted once, by the outermost scope
    }
    install_handlers_once();
    inside_counter& counter = counter_of_this_thread();
    for (;;) {
        // seq_cst on both sides (this add, prepare's store of `forking`): either prepare sees
        // this thread inside, or this thread sees the fork under way.
        counter.threads.fetch_add(1, std::memory_order_seq_cst);
        if (!forking.load(std::memory_order_seq_cst)) [[likely]] {
            break;
        }
        counter.threads.fetch_sub(1, std::memory_order_seq_cst);
        while (forking.load(std::memory_order_seq_cst)) {
            std::this_thread::yield();
        }
    }
    if (unusable_child.load(std::memory_order_relaxed)) [[unlikely]] {
        counter.threads.fetch_sub(1, std::memory_order_release);
        my_depth = 0;
        refuse_in_unusable_child();
    }
}

fork_gate_scope::~fork_gate_scope() {
    if (--my_depth == 0) {
        inside[my_counter].threads.fetch_sub(1, std::memory_order_release);
    }
}

}  // namespace memtrail::recorder::librecorder
