#pragma once
// fork() while other threads are inside memtrail: the child is a copy of the forking thread
// alone, and every lock another thread held at that instant (the device lock, the stack
// table's, the trace's) stays held in it forever; 19 of 20 children of a recording process hung
// in memtrail_malloc. Every C API call, and the signal dump's helper thread, passes through this
// gate. pthread_atfork's prepare handler closes it and waits until no other thread is inside, so
// the child starts with every memtrail lock free and can allocate, record and dump.
//
// A thread inside memtrail may wait for something the forking thread holds (Python's fork()
// holds the GIL; a free-memory callback inside an allocation waits for it): prepare then gives
// up after a bounded wait rather than deadlock, and that child cannot use memtrail safely: its
// calls fail with MEMTRAIL_ERROR_NOT_STARTED and it says so once on stderr.
//
// Every allocation and free passes here, so a thread's entry costs two plain stores and a load,
// inline, on lines no other thread writes: the thread raises a flag of its own (a "presence")
// and looks at whether a fork is under way; prepare orders the two with a barrier on every
// thread (memtrail/core/process_barrier.hpp) instead of each entry paying a fence. A call through
// the gate that took two atomic read-modify-writes and two out-of-line calls cost 15 ns of a
// 115 ns pair on the development machine.

#include <atomic>
#include <cstdint>
#include <stdexcept>

namespace memtrail::recorder::librecorder {

// A call in a child forked while another thread was inside memtrail.
class forked_child_error : public std::runtime_error {
  public:
    using std::runtime_error::runtime_error;
};

namespace fork_gate_detail {

// A thread's flag, on a line of its own that only its thread writes.
struct alignas(64) presence {
    std::atomic<uint32_t> inside{0};
    std::atomic<bool> taken{false};  // by a live thread
};

// The calling thread's part. Trivially destructible, so still valid in calls made while the
// thread is torn down. (Not initial-exec: that would put all of librecorder's thread-local
// storage in the static block, which a librecorder loaded by dlopen, as Python loads it, cannot
// always get.)
struct thread_gate {
    presence* own = nullptr;
    uint32_t depth = 0;   // nesting of gate scopes
    bool shares = false;  // it found no presence free, or its own went back as it ended
    bool inside_shared = false;
};
extern constinit thread_local thread_gate this_thread_gate;
extern std::atomic<bool> forking;
extern std::atomic<bool> unusable_child;
// Whether prepare runs a barrier on every thread; else an entry runs a full fence.
extern bool asymmetric_barrier;

// The ways in and out that are not the common one: a thread's first entry, a fork under way, a
// thread without a presence, a child that cannot use memtrail.
void enter_rarely();
void leave_shared();

}  // namespace fork_gate_detail

// Enters the gate for the life of the object; waits while a fork is under way. Nested calls of
// one thread count once.
class fork_gate_scope {
  public:
    // @throws forked_child_error in a child forked while another thread was inside memtrail.
    [[gnu::always_inline]] fork_gate_scope() : gate_(this_thread_gate()) {
        fork_gate_detail::thread_gate& gate = *gate_;
        if (gate.depth++ > 0) {
            return;  // nested: counted once, by the outermost scope
        }
        fork_gate_detail::presence* const own = gate.own;
        if (own != nullptr && fork_gate_detail::asymmetric_barrier) [[likely]] {
            own->inside.store(1, std::memory_order_relaxed);
            // prepare's barrier orders this store before the load below on the CPU.
            std::atomic_signal_fence(std::memory_order_seq_cst);
            if (!fork_gate_detail::forking.load(std::memory_order_relaxed) &&
                !fork_gate_detail::unusable_child.load(std::memory_order_relaxed)) [[likely]] {
                std::atomic_thread_fence(std::memory_order_acquire);
                return;
            }
            own->inside.store(0, std::memory_order_release);
        }
        fork_gate_detail::enter_rarely();
    }
    [[gnu::always_inline]] ~fork_gate_scope() {
        fork_gate_detail::thread_gate& gate = *gate_;
        if (--gate.depth == 0) {
            if (!gate.inside_shared) [[likely]] {
                gate.own->inside.store(0, std::memory_order_release);
            } else {
                fork_gate_detail::leave_shared();
            }
        }
    }
    fork_gate_scope(const fork_gate_scope&) = delete;
    fork_gate_scope& operator=(const fork_gate_scope&) = delete;

  private:
    // Looked up once for both ends: each lookup is a call to __tls_get_addr, which the compiler
    // would rather make again than keep the address across the call between them, unless the
    // address is hidden from it.
    [[gnu::always_inline]] static fork_gate_detail::thread_gate* this_thread_gate() {
        fork_gate_detail::thread_gate* gate = &fork_gate_detail::this_thread_gate;
        asm("" : "+r"(gate));
        return gate;
    }
    fork_gate_detail::thread_gate* const gate_;
};

}  // namespace memtrail::recorder::librecorder
