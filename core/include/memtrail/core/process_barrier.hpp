#pragma once
// A memory barrier on every thread of the process at once (Linux's membarrier, private
// expedited): the heavy side of an asymmetric Dekker protocol. A thread that runs a fast path
// with only a compiler barrier between its store and its load (the device lock's biased owner,
// reentrant_mutex.hpp) is ordered by the barrier of the rare thread that needs it: once
// process_barrier() returns, each other thread's stores made before it are visible to the
// caller, and each load that thread makes after it sees what the caller stored before.
// A barrier costs a system call and an interrupt to each CPU running a thread of the process
// (2.5 us on an H100 host with one other thread running, 7.6 us on the development machine).
// Public for librecorder's fork gate, which orders its threads' entries the same way.

namespace memtrail {

// Whether process_barrier() works in this process: asks the kernel once per process (again in
// a child after fork) to register it. False where the kernel lacks the command (before Linux
// 4.14, or a sandbox that does not offer it).
bool process_barrier_ready();

// The barrier. Only after process_barrier_ready() returned true in this process or its parent; a
// barrier the kernel then refuses leaves no safe way on, so it ends the process with a message.
void process_barrier();

}  // namespace memtrail
