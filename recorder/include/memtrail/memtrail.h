/* memtrail's C API: the caching allocator with its recorder, for C, C++, Python (ctypes), R and
 * PyTorch's CUDAPluggableAllocator. Link librecorder.so (or dlopen it).
 *
 * The device comes from the MEMTRAIL_DEVICE environment variable: "cuda" (the default; needs a
 * build with CUDA) or "sim[:capacity]" for a simulated device ("sim:80GiB"), which
 * MEMTRAIL_SIM_FAIL_NTH (the Nth device allocation fails once) and MEMTRAIL_SIM_FAIL_RATE (each
 * fails with this probability) make fail on purpose. Other switches, read once at the first
 * call: MEMTRAIL_RECORD (off | state | all), MEMTRAIL_STACKS (native | python | all),
 * MEMTRAIL_MAX_ENTRIES (0: the default), MEMTRAIL_UNWINDER (libunwind | eh_frame | frame_pointer),
 * MEMTRAIL_ALLOC_CONF (PYTORCH_CUDA_ALLOC_CONF syntax), MEMTRAIL_OOM_DUMP (a path pattern:
 * a snapshot is written there on every out-of-memory), MEMTRAIL_SIGNAL_DUMP (a path pattern:
 * a snapshot is written there when the process receives MEMTRAIL_DUMP_SIGNAL: SIGUSR1 by
 * default, SIGUSR2 or a real-time signal). Path patterns expand %p (pid), %d (device) and %t
 * (time, ns since the epoch). docs/recorder.md describes each.
 *
 * Errors: functions returning int return 0 on success and -1 on failure; memtrail_malloc returns
 * NULL. Every call first clears the calling thread's error, so after a call
 * memtrail_last_error_code() is 0 and memtrail_last_error() "" on success, and
 * otherwise they say what kind of failure it was and what exactly went wrong. Nothing throws.
 *
 * Version: the major, minor and patch macros of memtrail/version.h are the version this header
 * belongs to, memtrail_version() the one of the librecorder a program runs with. This opening
 * comment names every environment variable librecorder reads, and only those. */
#ifndef MEMTRAIL_MEMTRAIL_H
#define MEMTRAIL_MEMTRAIL_H

#include <stddef.h>
#include <sys/types.h>

#include "memtrail/version.h"

/* librecorder is built with hidden visibility; only what is marked here is exported. */
#if defined(__GNUC__)
#define MEMTRAIL_API __attribute__((visibility("default")))
#else
#define MEMTRAIL_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* --- version and errors --------------------------------------------------------------------- */

/* The version of the running librecorder as MEMTRAIL_VERSION_NUMBER encodes it; compare it with
 * MEMTRAIL_VERSION_NUMBER, the header's. Starts nothing and leaves the thread's error alone. */
MEMTRAIL_API int memtrail_version(void);

/* What kind of failure the calling thread's last memtrail call had, for a program to act on;
 * memtrail_last_error() has the details. */
typedef enum memtrail_error_code {
    MEMTRAIL_OK = 0,
    /* The device (or the host) has no room for the request: free memory, call
     * memtrail_empty_cache, or ask for less. */
    MEMTRAIL_ERROR_OUT_OF_MEMORY = 1,
    /* An argument memtrail cannot take: a NULL or unknown name, a negative or absurd size, a
     * device that does not exist, a memory fraction outside 0..1. */
    MEMTRAIL_ERROR_BAD_ARGUMENT = 2,
    /* A pointer memtrail does not hold: never handed out by memtrail_malloc, or freed already. */
    MEMTRAIL_ERROR_UNKNOWN_POINTER = 3,
    /* A bad setting: a MEMTRAIL_* environment variable or an allocator configuration string. */
    MEMTRAIL_ERROR_BAD_CONFIG = 4,
    /* memtrail could not start (no usable device); nothing was done, and the next call tries
     * again. */
    MEMTRAIL_ERROR_NOT_STARTED = 5,
    /* A file could not be written (a snapshot): a missing folder, no permission, a full disk. */
    MEMTRAIL_ERROR_IO = 6,
    /* The device failed in another way than running out of memory (a CUDA error). */
    MEMTRAIL_ERROR_DEVICE = 7,
    /* Anything else: a failure inside memtrail, described by memtrail_last_error(). */
    MEMTRAIL_ERROR_INTERNAL = 8
} memtrail_error_code;

/* --- allocation: exactly the signatures PyTorch's CUDAPluggableAllocator loads -------------- */

/* A block of at least `size` bytes on `device`, usable on `stream` (a cudaStream_t, NULL for the
 * default stream). NULL on failure, out of memory included. */
MEMTRAIL_API void* memtrail_malloc(ssize_t size, int device, void* stream);
/* Returns a block from memtrail_malloc; `size` and `stream` are not needed and may be anything.
 * A pointer memtrail does not hold is reported as MEMTRAIL_ERROR_UNKNOWN_POINTER. */
MEMTRAIL_API void memtrail_free(void* ptr, ssize_t size, int device, void* stream);

/* --- history ------------------------------------------------------------------------------ */

/* As torch.cuda.memory._record_memory_history, for every device.
 * enabled: "off" (or NULL), "state" or "all". context: "none" (or NULL), "state", "alloc" or
 * "all". stacks: "native" (or NULL), "python" or "all" (both); Python frames come from threads
 * running Python code, when memtrail runs in Python (docs/recorder.md). max_entries: trace
 * entries kept per device, 0 for the default (MEMTRAIL_MAX_ENTRIES, else 1000000). */
MEMTRAIL_API int memtrail_record_memory_history(const char* enabled, const char* context,
                                                const char* stacks, size_t max_entries);
/* Forgets the trace recorded so far, on every device. */
MEMTRAIL_API int memtrail_clear_memory_history(void);
/* Writes a snapshot of the allocator's state and history: a PyTorch pickle when `path` ends in
 * ".pickle", else memtrail's format. */
MEMTRAIL_API int memtrail_dump_snapshot(const char* path);

/* --- annotations ------------------------------------------------------------------------- */

MEMTRAIL_API int memtrail_range_start(const char* name);
MEMTRAIL_API int memtrail_range_end(const char* name);
MEMTRAIL_API int memtrail_marker(const char* name);
/* Copied into every event the calling thread records from now on; NULL or "" for none. */
MEMTRAIL_API int memtrail_set_thread_metadata(const char* metadata);

/* --- allocator control --------------------------------------------------------------------- */

/* Returns the cached, unused memory of `device` (-1: every device) to the device. */
MEMTRAIL_API int memtrail_empty_cache(int device);
/* Marks `ptr` as in use on `stream` until the work queued there so far is done.
 * MEMTRAIL_ERROR_UNKNOWN_POINTER when `ptr` is not an allocated block. */
MEMTRAIL_API int memtrail_record_stream(void* ptr, void* stream);
/* Limits `device` to fraction * its total memory (torch.cuda.set_per_process_memory_fraction). */
MEMTRAIL_API int memtrail_set_memory_fraction(double fraction, int device);
/* Replaces the allocator settings of every device (PYTORCH_CUDA_ALLOC_CONF syntax). */
MEMTRAIL_API int memtrail_set_allocator_config(const char* config);

/* --- information --------------------------------------------------------------------------- */

/* PyTorch's memory_summary() table for `device`. The text stays valid until the calling thread's
 * next memtrail_memory_summary; NULL on failure. */
MEMTRAIL_API const char* memtrail_memory_summary(int device);
/* Number of devices memtrail manages, or -1 when it cannot start (see memtrail_last_error). */
MEMTRAIL_API int memtrail_device_count(void);
/* What went wrong in the calling thread's last memtrail call, "" if nothing did. */
MEMTRAIL_API const char* memtrail_last_error(void);
/* The kind of that failure (a memtrail_error_code), MEMTRAIL_OK if nothing went wrong. */
MEMTRAIL_API int memtrail_last_error_code(void);

#ifdef __cplusplus
}
#endif

#endif /* MEMTRAIL_MEMTRAIL_H */
