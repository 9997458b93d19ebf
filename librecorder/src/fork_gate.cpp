#include "detail/fork_gate.hpp"

#include <pthread.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <thread>

#include "memtrail/core/process_barrier.hpp"

namespace memtrail::recorder::librecorder {

namespace fork_gate_detail {

constinit thread_local thread_gate this_thread_gate;
std::atomic<bool> forking{false};
// Set in a child forked while another thread was still inside memtrail.
std::atomic<bool> unusable_child{false};
// Decided once, before any thread enters through its presence.
bool asymmetric_barrier = false;

}  // namespace fork_gate_detail

namespace {

using fork_gate_detail::forking;
using fork_gate_detail::presence;
using fork_gate_detail::thread_gate;
using fork_gate_detail::unusable_child;

constexpr size_t presence_count = 256;
std::array<presence, presence_count> presences;
// Threads without a presence of their own (those that found all presence_count taken, and those
// whose own went back as they ended) count themselves here, with read-modify-writes.
alignas(64) std::atomic<uint32_t> shared_inside{0};

std::atomic<bool> unusable_said{false};
// How long prepare waits for the threads inside to leave before it lets the fork go on.
constexpr auto most_wait = std::chrono::seconds(2);
thread_local bool forking_thread_inside = false;

thread_gate& this_thread() {
    return fork_gate_detail::this_thread_gate;
}

// Gives the thread's presence back when it ends.
struct presence_return {
    bool armed = false;
    ~presence_return() {
        thread_gate& gate = this_thread();
        if (gate.own != nullptr) {
            gate.own->taken.store(false, std::memory_order_release);
            gate.own = nullptr;
        }
        gate.shares = true;
    }
};
thread_local presence_return return_at_exit;

// The thread's first entry: a presence of its own, or none (it shares for its life).
void claim_presence() {
    thread_gate& gate = this_thread();
    if (gate.shares) {
        return;
    }
    for (presence& p : presences) {
        bool expected = false;
        if (!p.taken.load(std::memory_order_relaxed) &&
            p.taken.compare_exchange_strong(expected, true, std::memory_order_acquire)) {
            gate.own = &p;
            return_at_exit.armed = true;  // its first use registers its destructor
            return;
        }
    }
    gate.shares = true;
}

// Waits until `count` falls to `own` (what the forking thread itself holds there); false when
// the deadline passed first.
bool wait_for(const std::atomic<uint32_t>& count, uint32_t own,
              std::chrono::steady_clock::time_point deadline) {
    while (count.load(std::memory_order_seq_cst) != own) {
        if (std::chrono::steady_clock::now() > deadline) {
            return false;
        }
        std::this_thread::yield();
    }
    return true;
}

void prepare() {
    forking.store(true, std::memory_order_seq_cst);
    // After the barrier every thread that raised its flag before it shows it here, and every
    // later one sees `forking` and waits; those that entered before leave.
    if (fork_gate_detail::asymmetric_barrier) {
        process_barrier();
    }
    // The forking thread may be inside itself (a fork from a callback): its own count stays.
    const thread_gate& gate = this_thread();
    const bool mine = gate.depth > 0;
    const auto deadline = std::chrono::steady_clock::now() + most_wait;
    for (presence& p : presences) {
        const uint32_t own = (mine && !gate.inside_shared && &p == gate.own) ? 1 : 0;
        if (!wait_for(p.inside, own, deadline)) {
            unusable_child.store(true, std::memory_order_relaxed);
            return;
        }
    }
    if (!wait_for(shared_inside, mine && gate.inside_shared ? 1 : 0, deadline)) {
        unusable_child.store(true, std::memory_order_relaxed);
        return;
    }
    forking_thread_inside = mine;
}

void in_parent() {
    unusable_child.store(false, std::memory_order_relaxed);
    forking.store(false, std::memory_order_seq_cst);
}

void in_child() {
    // The other threads are gone, and their presences with them; their counts were zero unless
    // prepare gave up waiting.
    thread_gate& gate = this_thread();
    for (presence& p : presences) {
        if (&p != gate.own) {
            p.taken.store(false, std::memory_order_relaxed);
        }
    }
    if (!unusable_child.load(std::memory_order_relaxed)) {
        for (presence& p : presences) {
            p.inside.store(0, std::memory_order_relaxed);
        }
        shared_inside.store(0, std::memory_order_relaxed);
        if (forking_thread_inside) {
            (gate.inside_shared ? shared_inside : gate.own->inside)
                .store(1, std::memory_order_relaxed);
        }
    }
    forking.store(false, std::memory_order_seq_cst);
}

void install_handlers_once() {
    static const int installed = [] {
        fork_gate_detail::asymmetric_barrier = process_barrier_ready();
        return ::pthread_atfork(prepare, in_parent, in_child);
    }();
    if (installed != 0) {
        std::fprintf(stderr,
                     "memtrail: cannot install fork handlers (error %d): a child forked "
                     "while memtrail is in use may hang\n",
                     installed);
    }
}

void wait_while_forking() {
    while (forking.load(std::memory_order_seq_cst)) {
        std::this_thread::yield();
    }
}

// Through the thread's own presence: its flag raised, then `forking` looked at, ordered by
// prepare's barrier or, without one, by a fence here.
void enter_own(presence& p) {
    for (;;) {
        p.inside.store(1, std::memory_order_relaxed);
        if (fork_gate_detail::asymmetric_barrier) {
            std::atomic_signal_fence(std::memory_order_seq_cst);
        } else {
            std::atomic_thread_fence(std::memory_order_seq_cst);
        }
        if (!forking.load(std::memory_order_relaxed)) {
            std::atomic_thread_fence(std::memory_order_acquire);
            return;
        }
        p.inside.store(0, std::memory_order_release);
        wait_while_forking();
    }
}

void enter_shared() {
    for (;;) {
        // seq_cst on both sides (this add, prepare's store of `forking`): either prepare sees
        // this thread inside, or this thread sees the fork under way.
        shared_inside.fetch_add(1, std::memory_order_seq_cst);
        if (!forking.load(std::memory_order_seq_cst)) {
            return;
        }
        shared_inside.fetch_sub(1, std::memory_order_seq_cst);
        wait_while_forking();
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

namespace fork_gate_detail {

void enter_rarely() {
    thread_gate& gate = this_thread();
    if (gate.own == nullptr && !gate.shares) {
        install_handlers_once();
        claim_presence();
    }
    if (gate.own != nullptr) {
        enter_own(*gate.own);
    } else {
        gate.inside_shared = true;
        enter_shared();
    }
    if (unusable_child.load(std::memory_order_relaxed)) [[unlikely]] {
        if (gate.inside_shared) {
            leave_shared();
        } else {
            gate.own->inside.store(0, std::memory_order_release);
        }
        gate.depth = 0;
        refuse_in_unusable_child();
    }
}

void leave_shared() {
    this_thread().inside_shared = false;
    shared_inside.fetch_sub(1, std::memory_order_release);
}

}  // namespace fork_gate_detail

}  // namespace memtrail::recorder::librecorder
