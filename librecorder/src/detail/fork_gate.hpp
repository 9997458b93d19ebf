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
// Inside the gate a call costs one atomic add and one subtract on a counter shared with few other
// threads (threads are spread over counters on cache lines of their own).

#include <stdexcept>

namespace memtrail::recorder::librecorder {

// A call in a child forked while another thread was inside memtrail.
class forked_child_error : public std::runtime_error {
  public:
    using std::runtime_error::runtime_error;
};

// Enters the gate for the life of the object; waits while a fork is under way. Nested calls of
// one thread count once.
class fork_gate_scope {
  public:
    // @throws forked_child_error in a child forked while another thread was inside memtrail.
    fork_gate_scope();
    ~fork_gate_scope();
    fork_gate_scope(const fork_gate_scope&) = delete;
    fork_gate_scope& operator=(const fork_gate_scope&) = delete;
};

}  // namespace memtrail::recorder::librecorder
