/* event_producer RATE SECONDS: records trace events at RATE a second for SECONDS on the device
 * MEMTRAIL_DEVICE names, for tests/gpu/live_cost.py's measure of the live stream. Each
 * malloc/free pair of 1 MiB is three events (alloc, free_requested, free_completed). It prints
 * "READY" once librecorder runs (its endpoint is open), waits for a line on stdin, records, and
 * prints {"events": N, "seconds": S}. A RATE of 0 records as fast as it can. */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "memtrail/memtrail.h"

static double now_seconds(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int record_pair(void) {
    void* block = memtrail_malloc((ssize_t)1 << 20, 0, NULL);
    if (block == NULL) {
        fprintf(stderr, "event_producer: %s\n", memtrail_last_error());
        return -1;
    }
    memtrail_free(block, 0, 0, NULL);
    return 0;
}

int main(int argc, char** argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: event_producer RATE SECONDS\n");
        return 2;
    }
    const double rate = strtod(argv[1], NULL);
    const double seconds = strtod(argv[2], NULL);
    if (record_pair() != 0) {
        return 1;
    }
    printf("READY\n");
    fflush(stdout);
    char line[64];
    if (fgets(line, sizeof line, stdin) == NULL) {
        return 1;
    }
    const double start = now_seconds();
    const struct timespec pause = {0, 200000};
    long long pairs = 0;
    double now = start;
    while ((now = now_seconds()) < start + seconds) {
        /* The pairs due by now, at most a millisecond's worth at a time. */
        const long long due = rate > 0 ? (long long)((now - start) * rate / 3) : pairs + 1000;
        while (pairs < due) {
            if (record_pair() != 0) {
                return 1;
            }
            ++pairs;
        }
        if (rate > 0) {
            nanosleep(&pause, NULL);
        }
    }
    printf("{\"events\": %lld, \"seconds\": %f}\n", 3 * pairs, now_seconds() - start);
    return 0;
}
