#include "device_memory.hpp"

#include <atomic>
#include <cstdio>
#include <cstring>

#include "memtrail/memtrail.h"

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

memory_result cache_allocate(void** out, size_t size, int device, void* stream, const char* call) {
    reached.store(true, std::memory_order_relaxed);
    *out = memtrail_malloc(static_cast<ssize_t>(size), device, stream);
    if (*out != nullptr || size == 0) {
        return memory_result::ok;
    }
    // The allocator's out-of-memory error is the program's to handle, as CUDA's would be.
    if (std::strstr(memtrail_last_error(), "out of memory") != nullptr) {
        return memory_result::out_of_memory;
    }
    report_failure(call);
    return memory_result::failed;
}

bool cache_free(void* pointer, void* stream) {
    if (stream != nullptr && memtrail_record_stream(pointer, stream) != 0) {
        return false;
    }
    memtrail_free(pointer, 0, -1, stream);
    return memtrail_last_error()[0] == '\0';
}

void observe_allocated(void* pointer, size_t size, int device, void* stream, const char* call) {
    reached.store(true, std::memory_order_relaxed);
    if (memtrail_observe_malloc(pointer, size, device, stream) != 0) {
        report_failure(call);
    }
}

void observe_freeing(void* pointer, int device, const char* call) {
    // A pointer allocated before recording could see it, or by a call memtrail does not watch.
    if (memtrail_observe_free(pointer, device) != 0 &&
        std::strstr(memtrail_last_error(), "not an observed allocation") == nullptr) {
        report_failure(call);
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
