/* Private pools through the C API from C, on a simulated device (MEMTRAIL_DEVICE=sim:1GiB, set
 * by ctest): each call, its error codes, allocations inside and outside a pool (for the calling
 * thread, for a stream, through a filter), use counts, and a released pool's memory given back.
 * The memory is back when the "GPU reserved memory" row of memtrail_memory_summary reads 0.
 * Usage: test_recorder_c_api_pools */
#define _POSIX_C_SOURCE 200809L

#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "c_check.h"
#include "memtrail/memtrail.h"

#define MIB (1 << 20)

/* Whether device 0's reserved memory is 0: the first figure of memtrail_memory_summary's
 * "GPU reserved memory" row, its current value. */
static int reserved_is_zero(void) {
    const char* summary = memtrail_memory_summary(0);
    const char* row = summary != NULL ? strstr(summary, "GPU reserved memory") : NULL;
    const char* bar = row != NULL ? strchr(row, '|') : NULL;
    if (bar == NULL) {
        return 0;
    }
    unsigned long long amount = 1;
    return sscanf(bar + 1, "%llu", &amount) == 1 && amount == 0;
}

static void* allocate_in_another_thread(void* size) {
    return memtrail_malloc((ssize_t)(size_t)size, 0, NULL);
}

static int accept_stream_0x30(void* stream, void* context) {
    ++*(int*)context;
    return stream == (void*)0x30;
}

int main(void) {
    /* Errors: a device that does not exist, the default pools, unknown flags, misuse. */
    CHECK(memtrail_create_pool(4, 0, 1, 0) == -1);
    CHECK(memtrail_last_error_code() == MEMTRAIL_ERROR_BAD_ARGUMENT);
    CHECK(strstr(memtrail_last_error(), "device 4") != NULL);
    CHECK(memtrail_create_pool(0, 0, 0, 0) == -1);
    CHECK(memtrail_last_error_code() == MEMTRAIL_ERROR_BAD_ARGUMENT);
    CHECK(strstr(memtrail_last_error(), "default") != NULL);
    CHECK(memtrail_create_pool(0, 0, 1, 8) == -1);
    CHECK(memtrail_last_error_code() == MEMTRAIL_ERROR_BAD_ARGUMENT);
    CHECK(strstr(memtrail_last_error(), "flags 8") != NULL);
    CHECK(memtrail_end_allocate_to_pool(0, 0, 1) == -1);
    CHECK(memtrail_last_error_code() == MEMTRAIL_ERROR_BAD_ARGUMENT);
    CHECK(memtrail_release_pool(0, 0, 1) == -1);
    CHECK(strstr(memtrail_last_error(), "does not exist") != NULL);
    CHECK(memtrail_begin_allocate_to_pool_with_filter(0, 0, 1, NULL, NULL) == -1);
    CHECK(memtrail_last_error_code() == MEMTRAIL_ERROR_BAD_ARGUMENT);
    CHECK(memtrail_pool_use_count(0, 0, 1) == 0);
    CHECK(memtrail_last_error_code() == MEMTRAIL_OK);
    CHECK(memtrail_pool_use_count(-1, 0, 1) == -1);

    /* The calling thread's allocations go to the pool; another thread's do not. */
    CHECK(memtrail_create_pool(0, 0, 1, MEMTRAIL_POOL_NO_SPLIT | MEMTRAIL_POOL_USE_ON_OOM) == 0);
    CHECK(memtrail_begin_allocate_to_pool(0, 0, 1) == 0);
    CHECK(memtrail_begin_allocate_to_pool(0, 0, 1) == -1); /* already allocating to it */
    CHECK(memtrail_last_error_code() == MEMTRAIL_ERROR_BAD_ARGUMENT);
    CHECK(memtrail_pool_use_count(0, 0, 1) == 2);
    void* in_pool = memtrail_malloc(4 * MIB, 0, NULL);
    CHECK(in_pool != NULL);
    pthread_t other;
    void* outside = NULL;
    CHECK(pthread_create(&other, NULL, allocate_in_another_thread, (void*)(size_t)(4 * MIB)) == 0);
    CHECK(pthread_join(other, &outside) == 0);
    CHECK(outside != NULL);
    CHECK(memtrail_end_allocate_to_pool(0, 0, 1) == 0);

    /* A stream's allocations, and a filter's. */
    CHECK(memtrail_begin_allocate_to_pool_on_stream(0, 2, 0, (void*)0x20) == 0);
    void* on_stream = memtrail_malloc(MIB, 0, (void*)0x20);
    CHECK(on_stream != NULL);
    CHECK(memtrail_end_allocate_to_pool(0, 2, 0) == 0);
    int filter_calls = 0;
    CHECK(memtrail_begin_allocate_to_pool_with_filter(0, 3, 0, accept_stream_0x30, &filter_calls) ==
          0);
    void* filtered = memtrail_malloc(MIB, 0, (void*)0x30);
    CHECK(filtered != NULL);
    CHECK(filter_calls > 0);
    CHECK(memtrail_end_allocate_to_pool(0, 3, 0) == 0);

    /* Dumped for test_recorder_c_api_pools_snapshot, which reads the pools of the segments. */
    CHECK(memtrail_dump_snapshot("c-api-pools.memtrail") == 0);
    CHECK(memtrail_dump_snapshot("c-api-pools.pickle") == 0);

    /* Everything freed: the pools keep their cached memory until they are released. */
    memtrail_free(in_pool, 0, 0, NULL);
    memtrail_free(outside, 0, 0, NULL);
    memtrail_free(on_stream, 0, 0, NULL);
    memtrail_free(filtered, 0, 0, NULL);
    CHECK(memtrail_last_error_code() == MEMTRAIL_OK);
    CHECK(memtrail_empty_cache(0) == 0);
    CHECK(!reserved_is_zero());
    CHECK(memtrail_release_pool(0, 0, 1) == 0);
    CHECK(memtrail_release_pool(0, 0, 1) == 0);
    CHECK(memtrail_release_pool(0, 0, 1) == -1); /* released already */
    CHECK(strstr(memtrail_last_error(), "released") != NULL);
    CHECK(memtrail_release_pool(0, 2, 0) == 0);
    CHECK(memtrail_release_pool(0, 3, 0) == 0);
    CHECK(memtrail_empty_pool_cache(0, 0, 1) == 0);
    CHECK(!reserved_is_zero()); /* the other released pools wait for their own or a full one */
    CHECK(memtrail_empty_cache(0) == 0);
    CHECK(reserved_is_zero());
    CHECK(memtrail_pool_use_count(0, 0, 1) == 0);
    puts("c api pools: all checks passed");
    return 0;
}
