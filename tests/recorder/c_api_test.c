/* The C API from C: every call, its error reporting (codes and text), its version, and the
 * environment switches (MEMTRAIL_DEVICE, MEMTRAIL_OOM_DUMP, MEMTRAIL_SIGNAL_DUMP).
 * Usage: test_recorder_c_api FOLDER */
#define _POSIX_C_SOURCE 200809L

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "c_check.h"
#include "memtrail/memtrail.h"

static int file_exists(const char* path) {
    struct stat info;
    return stat(path, &info) == 0 && info.st_size > 0;
}

static int wait_for_file(const char* path) {
    for (int i = 0; i < 1000 && !file_exists(path); ++i) {
        struct timespec pause = {0, 10 * 1000 * 1000};
        nanosleep(&pause, NULL);
    }
    return file_exists(path);
}

int main(int argc, char** argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: %s FOLDER\n", argv[0]);
        return 2;
    }
    const char* folder = argv[1];
    char path[4096];

    /* The version, known before anything starts. */
    CHECK(memtrail_version() == MEMTRAIL_VERSION_NUMBER);
    CHECK(MEMTRAIL_VERSION_NUMBER ==
          MEMTRAIL_VERSION_MAJOR * 10000 + MEMTRAIL_VERSION_MINOR * 100 + MEMTRAIL_VERSION_PATCH);
    snprintf(path, sizeof path, "%d.%d.%d", MEMTRAIL_VERSION_MAJOR, MEMTRAIL_VERSION_MINOR,
             MEMTRAIL_VERSION_PATCH);
    CHECK(strcmp(path, MEMTRAIL_VERSION_STRING) == 0);
    CHECK(memtrail_last_error_code() == MEMTRAIL_OK);

    /* A bad environment is reported, and the next call tries again. */
    setenv("MEMTRAIL_DEVICE", "sim:lots", 1);
    CHECK(memtrail_device_count() == -1);
    CHECK(memtrail_last_error_code() == MEMTRAIL_ERROR_BAD_CONFIG);
    CHECK(strstr(memtrail_last_error(), "MEMTRAIL_DEVICE") != NULL);
    CHECK(memtrail_version() == MEMTRAIL_VERSION_NUMBER); /* leaves the error alone */
    CHECK(memtrail_last_error_code() == MEMTRAIL_ERROR_BAD_CONFIG);
    CHECK(memtrail_malloc(16, 0, NULL) == NULL);
    CHECK(memtrail_last_error_code() == MEMTRAIL_ERROR_BAD_CONFIG);

    /* So is a device that cannot start: here no GPU is visible. */
    setenv("MEMTRAIL_DEVICE", "cuda", 1);
    setenv("CUDA_VISIBLE_DEVICES", "", 1);
    CHECK(memtrail_device_count() == -1);
    CHECK(memtrail_last_error_code() == MEMTRAIL_ERROR_NOT_STARTED);
    CHECK(memtrail_dump_snapshot("never.memtrail") == -1);
    CHECK(memtrail_last_error_code() == MEMTRAIL_ERROR_NOT_STARTED);

    setenv("MEMTRAIL_DEVICE", "sim:1GiB", 1);
    snprintf(path, sizeof path, "%s/c-oom-%%p-%%d.memtrail", folder);
    setenv("MEMTRAIL_OOM_DUMP", path, 1);
    snprintf(path, sizeof path, "%s/c-signal-%%p.memtrail", folder);
    setenv("MEMTRAIL_SIGNAL_DUMP", path, 1);
    setenv("MEMTRAIL_RECORD", "all", 1);
    CHECK(memtrail_device_count() == 1);
    CHECK(strcmp(memtrail_last_error(), "") == 0);
    CHECK(memtrail_last_error_code() == MEMTRAIL_OK);

    /* Allocation, annotations and metadata. */
    CHECK(memtrail_set_thread_metadata("step 1") == 0);
    CHECK(memtrail_range_start("forward") == 0);
    void* a = memtrail_malloc(1 << 20, 0, NULL);
    CHECK(a != NULL);
    void* b = memtrail_malloc(512, 0, (void*)0x10);
    CHECK(b != NULL);
    CHECK(memtrail_record_stream(a, (void*)0x20) == 0);
    CHECK(memtrail_marker("loss") == 0);
    CHECK(memtrail_range_end("forward") == 0);
    CHECK(memtrail_set_thread_metadata(NULL) == 0);
    memtrail_free(a, 1 << 20, 0, NULL);
    CHECK(strcmp(memtrail_last_error(), "") == 0);
    memtrail_free(NULL, 0, 0, NULL);
    CHECK(strcmp(memtrail_last_error(), "") == 0);
    CHECK(memtrail_malloc(0, 0, NULL) == NULL);
    CHECK(strcmp(memtrail_last_error(), "") == 0);

    /* Errors: codes and messages, never a crash. */
    memtrail_free((void*)0x1234, 0, 0, NULL);
    CHECK(memtrail_last_error_code() == MEMTRAIL_ERROR_UNKNOWN_POINTER);
    CHECK(strstr(memtrail_last_error(), "0x1234") != NULL);
    memtrail_free(a, 1 << 20, 0, NULL); /* a second time */
    CHECK(memtrail_last_error_code() == MEMTRAIL_ERROR_UNKNOWN_POINTER);
    CHECK(memtrail_record_stream((void*)0x1234, NULL) == -1);
    CHECK(memtrail_last_error_code() == MEMTRAIL_ERROR_UNKNOWN_POINTER);
    CHECK(memtrail_malloc(-1, 0, NULL) == NULL);
    CHECK(memtrail_last_error_code() == MEMTRAIL_ERROR_BAD_ARGUMENT);
    CHECK(strstr(memtrail_last_error(), "negative") != NULL);
    CHECK(memtrail_malloc(16, 3, NULL) == NULL);
    CHECK(memtrail_last_error_code() == MEMTRAIL_ERROR_BAD_ARGUMENT);
    CHECK(strstr(memtrail_last_error(), "device 3") != NULL);
    CHECK(memtrail_record_memory_history("sometimes", NULL, NULL, 0) == -1);
    CHECK(memtrail_last_error_code() == MEMTRAIL_ERROR_BAD_ARGUMENT);
    CHECK(strstr(memtrail_last_error(), "sometimes") != NULL);
    CHECK(memtrail_record_memory_history("all", "all", "cpp", 0) == -1);
    CHECK(strstr(memtrail_last_error(), "native, python or all") != NULL);
    CHECK(memtrail_set_allocator_config("no_such_key:1") == -1);
    CHECK(memtrail_last_error_code() == MEMTRAIL_ERROR_BAD_CONFIG);
    CHECK(strstr(memtrail_last_error(), "no_such_key") != NULL);
    CHECK(memtrail_set_memory_fraction(1.5, 0) == -1);
    CHECK(memtrail_last_error_code() == MEMTRAIL_ERROR_BAD_ARGUMENT);
    CHECK(memtrail_memory_summary(7) == NULL);
    CHECK(memtrail_last_error_code() == MEMTRAIL_ERROR_BAD_ARGUMENT);
    CHECK(memtrail_dump_snapshot(NULL) == -1);
    CHECK(memtrail_last_error_code() == MEMTRAIL_ERROR_BAD_ARGUMENT);
    snprintf(path, sizeof path, "%s/no-such-folder/c-api.memtrail", folder);
    CHECK(memtrail_dump_snapshot(path) == -1);
    CHECK(memtrail_last_error_code() == MEMTRAIL_ERROR_IO);
    CHECK(strstr(memtrail_last_error(), "no-such-folder") != NULL);

    /* Allocator control. */
    const char* summary = memtrail_memory_summary(0);
    CHECK(summary != NULL && strlen(summary) > 100);
    CHECK(memtrail_empty_cache(-1) == 0);
    CHECK(memtrail_empty_cache(0) == 0);
    CHECK(memtrail_set_allocator_config("max_split_size_mb:64") == 0);
    CHECK(memtrail_set_memory_fraction(0.5, 0) == 0);
    CHECK(memtrail_record_memory_history("all", "alloc", "native", 1000) == 0);

    /* Out of memory: NULL, a message, and a snapshot where MEMTRAIL_OOM_DUMP says. */
    CHECK(memtrail_malloc((ssize_t)900 << 20, 0, NULL) == NULL);
    CHECK(memtrail_last_error_code() == MEMTRAIL_ERROR_OUT_OF_MEMORY);
    CHECK(strstr(memtrail_last_error(), "out of memory") != NULL);
    snprintf(path, sizeof path, "%s/c-oom-%d-0.memtrail", folder, (int)getpid());
    CHECK(file_exists(path));

    /* Snapshots on request and on a signal. */
    snprintf(path, sizeof path, "%s/c-api.memtrail", folder);
    CHECK(memtrail_dump_snapshot(path) == 0);
    CHECK(file_exists(path));
    snprintf(path, sizeof path, "%s/c-api.pickle", folder);
    CHECK(memtrail_dump_snapshot(path) == 0);
    CHECK(file_exists(path));
    CHECK(raise(SIGUSR1) == 0);
    snprintf(path, sizeof path, "%s/c-signal-%d.memtrail", folder, (int)getpid());
    CHECK(wait_for_file(path));

    CHECK(memtrail_clear_memory_history() == 0);
    CHECK(memtrail_record_memory_history(NULL, NULL, NULL, 0) == 0);
    memtrail_free(b, 512, 0, NULL);
    CHECK(strcmp(memtrail_last_error(), "") == 0);
    puts("c api: all checks passed");
    return 0;
}
