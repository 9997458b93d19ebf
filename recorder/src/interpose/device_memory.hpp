#pragma once
// What the runtime's and the driver's allocation hooks share: memtrail's allocator for
// --mode cache, the record of the program's own allocations for --mode observe, and how a
// failure inside memtrail is reported (on stderr, "memtrail: ..."; the program goes on).

#include <cstddef>

namespace memtrail::interpose {

enum class memory_result { ok, out_of_memory, failed };

// cache: a block from memtrail's allocator. A failure other than out of memory is reported.
memory_result cache_allocate(void** out, size_t size, int device, void* stream, const char* call);
// cache: gives `pointer` back to memtrail's allocator, after the work queued on `stream`; false
// when memtrail did not hand it out (it came from a call memtrail does not take over).
bool cache_free(void* pointer, void* stream);

// observe: records an allocation CUDA made for the program, and its free (before CUDA frees it,
// so that the address cannot be handed out again before the record is gone).
void observe_allocated(void* pointer, size_t size, int device, void* stream, const char* call);
void observe_freeing(void* pointer, int device, const char* call);

// memtrail's view of `device`: its free bytes (what memtrail caches counts as free) and total.
bool memory_info(int device, size_t* free_bytes, size_t* total_bytes, const char* call);

// Whether any program allocation has reached memtrail (so that there is a snapshot to write).
bool reached_memtrail();

// Prints "memtrail: CALL: what went wrong" (librecorder's last error) on stderr.
void report_failure(const char* call);

}  // namespace memtrail::interpose
