#pragma once
// What the runtime's and the driver's allocation hooks share: memtrail's allocator for
// --mode cache, the record of the program's own allocations for --mode observe, and how a
// failure inside memtrail is reported (on stderr, "memtrail: ..."; the program goes on).
//
// The calls into librecorder are inlined into the hooks: the stacks memtrail records then show
// one frame of the interposer, the hook named for the CUDA call, above the program's own.

#include <sys/types.h>

#include <cstddef>
#include <cstring>

#include "caller_module.hpp"
#include "memtrail/memtrail.h"

#define MEMTRAIL_INLINE [[gnu::always_inline]] inline

namespace memtrail::interpose {

enum class memory_result { ok, out_of_memory, failed };

// Prints "memtrail: CALL: what went wrong" (librecorder's last error) on stderr.
void report_failure(const char* call);

// Whether an allocation of this process has reached memtrail (so that there is a snapshot to
// write); a forked child's own count, not its parent's.
bool reached_memtrail();
// The first time, also arms the exit snapshot (exit_dump.cpp): registered after the CUDA runtimes
// have started, it runs before their own exit handlers unload them. The first time in a forked
// child, the snapshot inherited from the parent's arming is due again, the child's own.
void note_reached_memtrail();
void arm_exit_dump();
void exit_dump_due_again();
// The process whose allocation reached memtrail last noted (a vfork child, which shares its
// parent's memory and runs no fork handlers, is told apart by its pid).
pid_t process_that_reached();
// pthread_atfork's child handler: the child starts as a process that has reached nothing.
void note_forked_child();

// cache: a block from memtrail's allocator. A failure other than out of memory is reported.
MEMTRAIL_INLINE memory_result cache_allocate(void** out, size_t size, int device, void* stream,
                                             const char* call) {
    *out = memtrail_malloc(static_cast<ssize_t>(size), device, stream);
    note_reached_memtrail();  // after the call: librecorder's CUDA runtime has started by now
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

// cache: gives `pointer` back to memtrail's allocator, after the work queued on `stream`; false
// when memtrail did not hand it out (it came from a call memtrail does not take over).
MEMTRAIL_INLINE bool cache_free(void* pointer, void* stream) {
    if (stream != nullptr && memtrail_record_stream(pointer, stream) != 0) {
        return false;
    }
    memtrail_free(pointer, 0, -1, stream);
    return memtrail_last_error()[0] == '\0';
}

// observe: records an allocation CUDA made for the program, and its free (before CUDA frees it,
// so that the address cannot be handed out again before the record is gone).
MEMTRAIL_INLINE void observe_allocated(void* pointer, size_t size, int device, void* stream,
                                       const char* call) {
    if (memtrail_observe_malloc(pointer, size, device, stream) != 0) {
        report_failure(call);
    }
    note_reached_memtrail();
}

MEMTRAIL_INLINE void observe_freeing(void* pointer, int device, const char* call) {
    // A pointer allocated by a call memtrail does not watch is no error.
    if (memtrail_observe_free(pointer, device) != 0 &&
        std::strstr(memtrail_last_error(), "not an observed allocation") == nullptr) {
        report_failure(call);
    }
}

// --- PyTorch on memtrail: everything else passes through and is recorded -------------------

// sitecustomize.py made PyTorch allocate through librecorder in this process (not a forked or
// vforked child): its own requests reach memtrail that way, so every allocation the hooks see
// is another library's, passed to CUDA untouched and recorded as memory outside the allocator.
bool pytorch_allocates_here();

// While a hook passes a call to CUDA, the calls CUDA makes for it (cudaMalloc's cuMemAlloc, on
// the same thread) are that allocation, not another: they pass through unrecorded.
class passing_through {
  public:
    passing_through() { ++depth(); }
    ~passing_through() { --depth(); }
    passing_through(const passing_through&) = delete;
    passing_through& operator=(const passing_through&) = delete;
    static bool active() { return depth() != 0; }

  private:
    static int& depth() {
        static thread_local int nested = 0;
        return nested;
    }
};

// Records an allocation CUDA made outside memtrail's allocator (kind: MEMTRAIL_OUTSIDE_*), with
// the library that asked. False when memtrail refused it for want of room (the simulated device
// only): the caller undoes it and reports out of memory.
MEMTRAIL_INLINE bool outside_allocated(void* pointer, size_t size, int kind, int device,
                                       void* stream, const char* call) {
    const bool recorded =
        memtrail_outside_malloc(pointer, size, kind, device, stream, call, caller_module()) == 0;
    note_reached_memtrail();
    if (!recorded && memtrail_last_error_code() == MEMTRAIL_ERROR_OUT_OF_MEMORY) {
        return false;
    }
    if (!recorded) {
        report_failure(call);
    }
    return true;
}

// Records its free (before CUDA frees it, so that the address cannot be handed out again before
// the record is gone). One memtrail did not see made (before PyTorch moved to memtrail) is no
// error.
MEMTRAIL_INLINE void outside_freeing(void* pointer, int kind, int device, void* stream,
                                     const char* call) {
    if (memtrail_outside_free(pointer, kind, device, stream) != 0 &&
        memtrail_last_error_code() != MEMTRAIL_ERROR_UNKNOWN_POINTER) {
        report_failure(call);
    }
}

// memtrail's view of `device`: its free bytes (what memtrail caches counts as free) and total.
bool memory_info(int device, size_t* free_bytes, size_t* total_bytes, const char* call);

}  // namespace memtrail::interpose
