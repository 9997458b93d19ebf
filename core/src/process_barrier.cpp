#include "memtrail/core/process_barrier.hpp"

#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>

namespace memtrail {

namespace {

long membarrier(int command) {
    return syscall(__NR_membarrier, command, 0u, 0);
}

// The process that registered (0: none yet, -1: the kernel refused): a child after fork is
// another process, and registers for itself.
std::atomic<pid_t> registered_process{0};
std::mutex registering;

}  // namespace

bool process_barrier_ready() {
    const pid_t me = getpid();
    const pid_t seen = registered_process.load(std::memory_order_acquire);
    if (seen == me) {
        return true;
    }
    if (seen == -1) {
        return false;
    }
    std::lock_guard lock(registering);
    if (registered_process.load(std::memory_order_relaxed) == me) {
        return true;
    }
    const long supported = membarrier(MEMBARRIER_CMD_QUERY);
    const bool ready = supported > 0 && (supported & MEMBARRIER_CMD_PRIVATE_EXPEDITED) != 0 &&
                       membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) == 0;
    registered_process.store(ready ? me : -1, std::memory_order_release);
    return ready;
}

void process_barrier() {
    // Registered again first in a child after fork, whose parent made the lock's bias.
    if (!process_barrier_ready() || membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) != 0) {
        std::fprintf(stderr,
                     "memtrail: membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) failed after the "
                     "process registered for it (%s); the device lock cannot be handed over "
                     "safely\n",
                     std::strerror(errno));
        std::abort();
    }
}

}  // namespace memtrail
