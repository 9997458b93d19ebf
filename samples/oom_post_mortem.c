/* oom_post_mortem: run out of memory on purpose and find the snapshot memtrail left behind.
 *
 * A program linked with librecorder needs no code to get an out-of-memory post-mortem: the
 * environment switches it on. This sample sets defaults for the switches (a 2 GiB simulated
 * device, recording on, dumps into the current folder) that the shell can override:
 *
 *   build/bin/sample_oom_post_mortem
 *   MEMTRAIL_DEVICE=cuda MEMTRAIL_OOM_DUMP=/tmp/oom-%p-%d.memtrail build/bin/sample_oom_post_mortem
 *
 * When an allocation fails, memtrail writes a snapshot to MEMTRAIL_OOM_DUMP (%p: pid,
 * %d: device, %t: time), prints its path on stderr, and memtrail_malloc returns NULL with
 * memtrail_last_error_code() MEMTRAIL_ERROR_OUT_OF_MEMORY. Open the file with the viewer or
 * `memtrail`: its last trace entry is the failed request, and the segments show what held the
 * memory at that moment. */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <stdlib.h>

#include "memtrail/memtrail.h"

/* A cache that keeps every batch it sees: the leak this post-mortem is meant to find. */
static void* cached_batches[1024];

static void* load_batch(int index) {
    void* batch = memtrail_malloc((ssize_t)256 << 20, 0, NULL);
    if (batch != NULL) {
        cached_batches[index] = batch;
    }
    return batch;
}

int main(void) {
    setenv("MEMTRAIL_DEVICE", "sim:2GiB", 0); /* 0: the shell's values win */
    setenv("MEMTRAIL_RECORD", "all", 0);
    setenv("MEMTRAIL_OOM_DUMP", "oom-%p-device%d.memtrail", 0);

    for (int i = 0; i < 1024; ++i) {
        if (load_batch(i) == NULL) {
            /* The error code says what kind of failure it was; only running out of memory is
             * what this sample is about. */
            if (memtrail_last_error_code() != MEMTRAIL_ERROR_OUT_OF_MEMORY) {
                fprintf(stderr, "batch %d failed: %s\n", i, memtrail_last_error());
                return 1;
            }
            fprintf(stderr, "batch %d: out of memory: %s\n", i, memtrail_last_error());
            return 0;
        }
    }
    fprintf(stderr, "no out-of-memory: the device is larger than 256 GiB\n");
    return 1;
}
