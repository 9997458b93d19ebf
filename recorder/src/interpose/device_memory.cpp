#include "device_memory.hpp"

#include <atomic>
#include <cstdio>

namespace memtrail::interpose {

namespace {

std::atomic<bool> reached{false};

}  // namespace

void report_failure(const char* call) {
    std::fprintf(stderr, "memtrail: %s: %s\n", call, memtrail_last_error());
}

bool reached_memtrail() {
    return reached.load(std::memory_order_relaxed);
}

void note_reached_memtrail() {
    if (!reached.exchange(true, std::memory_order_relaxed)) {
        arm_exit_dump();
    }
}

bool memory_info(int device, size_t* free_bytes, size_t* total_bytes, const char* call) {
    if (memtrail_memory_info(device, free_bytes, total_bytes) != 0) {
        report_failure(call);
        return false;
    }
    return true;
}

}  // namespace memtrail::interpose
