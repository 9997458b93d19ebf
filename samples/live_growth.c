/* live_growth: a job whose memory grows slowly, to watch live and snapshot while it runs.
 *
 * Each step allocates a working buffer it frees again, and keeps one "cache" block of
 * 1 MiB, the leak a live view is meant to show growing. Every process linked with librecorder
 * opens an attach endpoint (docs/live.md), so from another terminal of the same user:
 *
 *   build/bin/sample_live_growth 600 100 &          # 600 steps of 100 ms
 *   build/bin/memtrail top --attach $!              # refreshed every second
 *   build/bin/memtrail snapshot $! -o now.memtrail  # the state and history right now
 *
 * Arguments: STEPS (default 100) and MILLISECONDS per step (default 100). It prints
 * "step N" after each step on stdout, so a script can wait for a given moment. */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "memtrail/memtrail.h"

/* The cache that never shrinks. */
static void* cache_block(void) {
    return memtrail_malloc((ssize_t)1 << 20, 0, NULL);
}

/* Working memory of one step, freed at its end. */
static int run_step(void) {
    void* activations = memtrail_malloc((ssize_t)8 << 20, 0, NULL);
    if (activations == NULL) {
        return -1;
    }
    memtrail_free(activations, 0, 0, NULL);
    return 0;
}

int main(int argc, char** argv) {
    setenv("MEMTRAIL_DEVICE", "sim:8GiB", 0); /* 0: the shell's values win */
    setenv("MEMTRAIL_RECORD", "all", 0);
    const long steps = argc > 1 ? strtol(argv[1], NULL, 10) : 100;
    const long step_ms = argc > 2 ? strtol(argv[2], NULL, 10) : 100;
    if (steps <= 0 || step_ms < 0) {
        fprintf(stderr, "usage: sample_live_growth [STEPS > 0] [MILLISECONDS >= 0]\n");
        return 2;
    }
    const struct timespec pause = {step_ms / 1000, (step_ms % 1000) * 1000000L};
    for (long step = 1; step <= steps; ++step) {
        if (run_step() != 0 || cache_block() == NULL) {
            fprintf(stderr, "step %ld failed: %s\n", step, memtrail_last_error());
            return 1;
        }
        printf("step %ld\n", step);
        fflush(stdout);
        nanosleep(&pause, NULL);
    }
    return 0;
}
