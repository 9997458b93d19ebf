/* memtrail's C API: the caching allocator with its recorder, for C, C++, Python (ctypes), R and
 * PyTorch's CUDAPluggableAllocator. Link librecorder.so (or dlopen it).
 *
 * The device comes from the MEMTRAIL_DEVICE environment variable: "cuda" (the default; needs a
 * build with CUDA) or "sim[:capacity]" for a simulated device ("sim:80GiB"), which
 * MEMTRAIL_SIM_FAIL_NTH (the Nth device allocation fails once) and MEMTRAIL_SIM_FAIL_RATE (each
 * fails with this probability) make fail on purpose. Other switches, read once at the first
 * call: MEMTRAIL_RECORD (off | state | all | production), MEMTRAIL_STACKS (native | python | all),
 * MEMTRAIL_MAX_ENTRIES (0: the default), MEMTRAIL_UNWINDER (eh_frame | libunwind | frame_pointer),
 * MEMTRAIL_PYTHON_FRAMES (direct | api | verify), MEMTRAIL_ALLOC_CONF (PYTORCH_CUDA_ALLOC_CONF
 * syntax; when unset, PYTORCH_ALLOC_CONF, else PYTORCH_CUDA_ALLOC_CONF, as PyTorch reads them),
 * MEMTRAIL_DEVICE_LOCK_BIAS (on | off),
 * MEMTRAIL_OOM_DUMP (a path pattern:
 * a snapshot is written there on each out-of-memory, the first 16), MEMTRAIL_SIGNAL_DUMP (a
 * path pattern: a snapshot is written there when the process receives MEMTRAIL_DUMP_SIGNAL:
 * SIGUSR1 by default, SIGUSR2 or a real-time signal), MEMTRAIL_LIVE (on | off: the endpoint
 * through which `memtrail snapshot PID` and `memtrail top --attach PID` read the process; on by
 * default, only for the same user; docs/live.md). Path patterns expand %p (pid), %d
 * (device), %t (time, ns since the epoch), %r (RANK), %l (LOCAL_RANK) and %j (the job id:
 * TORCHELASTIC_RUN_ID, else SLURM_JOB_ID). Under `memtrail run`, MEMTRAIL_MODE (cache |
 * observe) and MEMTRAIL_EXIT_DUMP (a path pattern) are the interposer's, and MEMTRAIL_RUN_FILES
 * lists every snapshot written. docs/settings.md describes each.
 *
 * Errors: functions returning int return 0 on success and -1 on failure; memtrail_malloc returns
 * NULL. Every call first clears the calling thread's error, so after a call
 * memtrail_last_error_code() is 0 and memtrail_last_error() "" on success, and
 * otherwise they say what kind of failure it was and what exactly went wrong. Nothing throws.
 *
 * Version: the major, minor and patch macros of memtrail/version.h are the version this header
 * belongs to, memtrail_version() the one of the librecorder a program runs with. This opening
 * comment names every MEMTRAIL_ environment variable the product reads, and only those. */
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
/* Returns a block from memtrail_malloc; `size` is not needed and may be anything. `stream` is
 * the block's stream when known (PyTorch passes it; NULL otherwise): a free on a stream that is
 * capturing a CUDA graph is then handled as one during the capture. A pointer memtrail does not
 * hold is reported as MEMTRAIL_ERROR_UNKNOWN_POINTER. */
MEMTRAIL_API void memtrail_free(void* ptr, ssize_t size, int device, void* stream);

/* --- allocations the program makes itself (memtrail run --mode observe) ------------------- */

/* Records a device allocation made outside memtrail (cudaMalloc, cuMemAlloc) with the calling
 * stack, as a segment holding one allocated block; memtrail's allocator is not involved. Returns
 * 0, or -1 with MEMTRAIL_ERROR_BAD_ARGUMENT (nothing recorded) for NULL, a size that would end
 * past the address space (SIZE_MAX), a device that does not exist, or an allocation overlapping
 * one observed and not freed (the same pointer twice). */
MEMTRAIL_API int memtrail_observe_malloc(void* ptr, size_t size, int device, void* stream);
/* Records its free; -1 when `ptr` is not an observed allocation of `device`. */
MEMTRAIL_API int memtrail_observe_free(void* ptr, int device);

/* --- memory outside the allocator (memtrail run on a PyTorch process) ---------------------- */

/* What an outside allocation is: device memory, managed memory, or pinned host memory. */
enum {
    MEMTRAIL_OUTSIDE_DEVICE = 0,
    MEMTRAIL_OUTSIDE_MANAGED = 1,
    MEMTRAIL_OUTSIDE_PINNED_HOST = 2
};

/* Records an allocation that reached CUDA outside memtrail's allocator while PyTorch allocates
 * through it (cuBLAS workspaces, NCCL buffers, pinned host memory), apart from the allocator's
 * history: the snapshot's outside_memory section, with the calling stack, `call` (the CUDA
 * call's name) and the library that asked, named from `caller_module` (the path of the module
 * that called CUDA; "libcublasLt.so.12" is "cuBLAS"). On a simulated device, which stands in for
 * CUDA, device memory is also taken from its capacity (MEMTRAIL_ERROR_OUT_OF_MEMORY when it has
 * no room). Returns 0, or -1 with MEMTRAIL_ERROR_BAD_ARGUMENT for a bad kind or device, or an
 * allocation of that kind already live at `ptr`. */
MEMTRAIL_API int memtrail_outside_malloc(void* ptr, size_t size, int kind, int device, void* stream,
                                         const char* call, const char* caller_module);
/* Records its free; -1 with MEMTRAIL_ERROR_UNKNOWN_POINTER when `ptr` is not a live outside
 * allocation of that kind. */
MEMTRAIL_API int memtrail_outside_free(void* ptr, int kind, int device, void* stream);
/* Says that this process's allocations outside memtrail's allocator are recorded from now on
 * (memtrail run's interposer calls it once PyTorch allocates through memtrail): librecorder then
 * divides each device's used memory into its reserved bytes, the outside allocations by library,
 * the CUDA context and other processes, before the device's first allocation, at each
 * out-of-memory and at each snapshot. Starts nothing (CUDA starts when it would have); returns
 * 0. */
MEMTRAIL_API int memtrail_account_outside_memory(void);

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

/* --- statistics ---------------------------------------------------------------------------- */

/* torch.cuda.memory_stats(device) as a JSON object, with PyTorch's names and meanings
 * ({"active.all.current": 2, "allocated_bytes.all.peak": 1048576, ...}). The text stays valid
 * until the calling thread's next memtrail_memory_stats_json; NULL on failure. */
MEMTRAIL_API const char* memtrail_memory_stats_json(int device);
/* The "peak" of every statistic of `device` becomes its "current" (-1: every device). */
MEMTRAIL_API int memtrail_reset_peak_memory_stats(int device);
/* The "allocated" and "freed" sums of every statistic of `device` restart at 0 (-1: every
 * device). */
MEMTRAIL_API int memtrail_reset_accumulated_memory_stats(int device);

/* --- post-mortem --------------------------------------------------------------------------- */

/* After each out-of-memory (the first 16), a snapshot is written to `pattern` (as
 * MEMTRAIL_OOM_DUMP; NULL or "" for none), replacing what was set before. */
MEMTRAIL_API int memtrail_set_oom_dump(const char* pattern);
/* When the process receives `signal` (SIGUSR1, SIGUSR2 or a real-time signal), a snapshot is
 * written to `pattern` (as MEMTRAIL_SIGNAL_DUMP; NULL, "" or signal 0 for none), replacing what
 * was set before. */
MEMTRAIL_API int memtrail_set_signal_dump(int signal, const char* pattern);

/* --- garbage collection by memory pressure -------------------------------------------------- */

/* How hard a collector should try: the allocator picks it from how full the device is, with the
 * callback_* allocator settings (docs/configuration.md). */
typedef enum memtrail_memory_pressure {
    MEMTRAIL_PRESSURE_LIGHT = 1,
    MEMTRAIL_PRESSURE_FULL = 2
} memtrail_memory_pressure;
/* A host runtime's garbage collector (Python's gc, R's gc): frees what it can at `pressure` and
 * returns nonzero if it may have freed device memory. */
typedef int (*memtrail_collect_callback)(int device, int pressure, void* user_data);
/* Makes `callback` the collector (NULL: none): called when the allocator would ask the device for
 * more memory while the device is under pressure, and once more, at MEMTRAIL_PRESSURE_FULL,
 * before memtrail_malloc fails for want of memory (the allocation is then tried again; the
 * out-of-memory stays recorded). It runs on the allocating thread without the device's lock, so
 * it may free and allocate through memtrail, and wait for threads that do (a GIL). */
MEMTRAIL_API int memtrail_set_collect_callback(memtrail_collect_callback callback, void* user_data);

/* --- private pools (CUDA graphs, torch.cuda.MemPool) ----------------------------------------- */

/* A private pool holds its own cached memory, which serves only allocations made to it. Pools are
 * named by two numbers, as PyTorch names them (MempoolId_t): (0, N) for torch.cuda.MemPool,
 * (N, 0) for a CUDA graph's; (0, 0) is the default pools and cannot be used here. Each function
 * acts on the allocator of `device` and returns 0, or -1 with MEMTRAIL_ERROR_BAD_ARGUMENT for a
 * device that does not exist or a pool used wrongly (ended without a begin, released twice). */

/* memtrail_create_pool's flags. */
#define MEMTRAIL_POOL_NO_SPLIT 1u   /* its blocks are never split (MemPool's no_split) */
#define MEMTRAIL_POOL_USE_ON_OOM 2u /* searched before an allocation fails with out of memory */

/* Creates the pool with `flags` (0, or MEMTRAIL_POOL_* or'ed), or takes one more use of it. */
MEMTRAIL_API int memtrail_create_pool(int device, unsigned long long pool_first,
                                      unsigned long long pool_second, unsigned int flags);
/* From now on the calling thread's allocations on `device` go to the pool, until
 * memtrail_end_allocate_to_pool (torch.cuda.use_mem_pool). Creates the pool, or takes a use of
 * it. Pools begun later take precedence over those begun before. */
MEMTRAIL_API int memtrail_begin_allocate_to_pool(int device, unsigned long long pool_first,
                                                 unsigned long long pool_second);
/* The same for every allocation on `stream`, whichever thread makes it (a graph capture). */
MEMTRAIL_API int memtrail_begin_allocate_to_pool_on_stream(int device,
                                                           unsigned long long pool_first,
                                                           unsigned long long pool_second,
                                                           void* stream);
/* The same for the allocations whose stream `filter` accepts (returns non-zero for), called
 * with `filter_context` under memtrail's lock on every allocation of `device` until the end:
 * it must be quick and must not call memtrail. `filter_context` must stay valid until then. */
typedef int (*memtrail_stream_filter)(void* stream, void* filter_context);
MEMTRAIL_API int memtrail_begin_allocate_to_pool_with_filter(int device,
                                                             unsigned long long pool_first,
                                                             unsigned long long pool_second,
                                                             memtrail_stream_filter filter,
                                                             void* filter_context);
/* Stops allocating to the pool; what it holds stays in it. */
MEMTRAIL_API int memtrail_end_allocate_to_pool(int device, unsigned long long pool_first,
                                               unsigned long long pool_second);
/* Gives up one use of the pool. At none its cached memory goes back to the device at the next
 * memtrail_empty_cache (or memtrail_empty_pool_cache), and the pool ends once it holds nothing. */
MEMTRAIL_API int memtrail_release_pool(int device, unsigned long long pool_first,
                                       unsigned long long pool_second);
/* The pool's uses; 0 for a pool released or unknown, -1 on failure. */
MEMTRAIL_API int memtrail_pool_use_count(int device, unsigned long long pool_first,
                                         unsigned long long pool_second);
/* Returns the cached, unused memory of the pool to the device once it is released (nothing
 * before), and ends the pool when it then holds nothing (torch.cuda.empty_cache of a MemPool). */
MEMTRAIL_API int memtrail_empty_pool_cache(int device, unsigned long long pool_first,
                                           unsigned long long pool_second);

/* An allocation on a stream that is capturing a CUDA graph, when no pool begun above takes it,
 * goes to a pool of that capture, (capture id, 0), which is never released: a graph replays the
 * addresses it captured, so its memory stays reserved until the process ends
 * (docs/recorder.md). */

/* --- information --------------------------------------------------------------------------- */

/* PyTorch's memory_summary() table for `device`. The text stays valid until the calling thread's
 * next memtrail_memory_summary; NULL on failure. */
MEMTRAIL_API const char* memtrail_memory_summary(int device);
/* memtrail's view of `device`'s memory, as cudaMemGetInfo reports it: the device's free bytes
 * plus what memtrail caches unused, and its total. */
MEMTRAIL_API int memtrail_memory_info(int device, size_t* free_bytes, size_t* total_bytes);
/* Number of devices memtrail manages, or -1 when it cannot start (see memtrail_last_error). */
MEMTRAIL_API int memtrail_device_count(void);
/* 1 when this process has had a device allocation from memtrail_malloc (or recorded one with
 * memtrail_observe_malloc), else 0. Starts nothing: `memtrail run` asks it at exit, so that a
 * process that imported PyTorch but allocated nothing (torchrun's launcher) leaves no snapshot.
 * In the symbol version MEMTRAIL_0.3. */
MEMTRAIL_API int memtrail_has_allocated(void);
/* What went wrong in the calling thread's last memtrail call, "" if nothing did. */
MEMTRAIL_API const char* memtrail_last_error(void);
/* The kind of that failure (a memtrail_error_code), MEMTRAIL_OK if nothing went wrong. */
MEMTRAIL_API int memtrail_last_error_code(void);

#ifdef __cplusplus
}
#endif

#endif /* MEMTRAIL_MEMTRAIL_H */
