#include "detail/device_memory.hpp"

#include <unistd.h>

#include <atomic>
#include <cstdio>

namespace memtrail::interpose {

namespace {

// A forked child is a process of its own: what its parent reached is not its to write.
std::atomic<uint64_t> process_generation{1};  // one more in every forked child
std::atomic<uint64_t> reached_in{0};          // the generation that reached memtrail, or 0
std::atomic<pid_t> reached_by{0};             // that process

}  // namespace

void report_failure(const char* call) {
    std::fprintf(stderr, "memtrail: %s: %s\n", call, memtrail_last_error());
}

bool reached_memtrail() {
    return reached_in.load(std::memory_order_relaxed) ==
           process_generation.load(std::memory_order_relaxed);
}

void note_reached_memtrail() {
    const uint64_t now = process_generation.load(std::memory_order_relaxed);
    const uint64_t before = reached_in.exchange(now, std::memory_order_relaxed);
    if (before == now) {
        return;
    }
    reached_by.store(getpid());
    if (before == 0) {
        arm_exit_dump();
    } else {
        exit_dump_due_again();  // a forked child that allocates writes a snapshot of its own
    }
}

pid_t process_that_reached() {
    return reached_by.load();
}

void note_forked_child() {
    process_generation.fetch_add(1, std::memory_order_relaxed);
}

bool memory_info(int device, size_t* free_bytes, size_t* total_bytes, const char* call) {
    if (memtrail_memory_info(device, free_bytes, total_bytes) != 0) {
        report_failure(call);
        return false;
    }
    return true;
}

}  // namespace memtrail::interpose
