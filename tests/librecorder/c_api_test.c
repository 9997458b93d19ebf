/* The C API from C: every call, its error reporting (codes and text), its version, the
 * environment switches (MEMTRAIL_DEVICE, MEMTRAIL_OOM_DUMP, MEMTRAIL_SIGNAL_DUMP) and the calls
 * that change them later, and a host garbage collector.
 * Usage: test_recorder_c_api FOLDER */
#define _POSIX_C_SOURCE 200809L

#include <dirent.h>
#include <signal.h>
#include <stdint.h>
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

static int files_starting_with(const char* folder, const char* prefix) {
    DIR* listing = opendir(folder);
    int count = 0;
    for (struct dirent* entry; listing != NULL && (entry = readdir(listing)) != NULL;) {
        count += strncmp(entry->d_name, prefix, strlen(prefix)) == 0;
    }
    if (listing != NULL) {
        closedir(listing);
    }
    return count;
}

/* A host garbage collector that owns one block: it frees it when asked, once. */
static void* held_by_collector = NULL;
static int collections_by_pressure[3] = {0, 0, 0};
static int collector_token = 0;

static int collect(int device, int pressure, void* user_data) {
    if (user_data != &collector_token || device != 0 || pressure < 1 || pressure > 2) {
        return 0;
    }
    ++collections_by_pressure[pressure];
    if (held_by_collector == NULL) {
        return 0;
    }
    memtrail_free(held_by_collector, 0, device, NULL);
    held_by_collector = NULL;
    return 1;
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
    /* Observed allocations: NULL, SIZE_MAX and the same pointer twice are refused (issue 31). */
    CHECK(memtrail_observe_malloc(NULL, 4096, 0, NULL) == -1);
    CHECK(memtrail_last_error_code() == MEMTRAIL_ERROR_BAD_ARGUMENT);
    CHECK(strstr(memtrail_last_error(), "at NULL") != NULL);
    CHECK(memtrail_observe_malloc((void*)0x7000, SIZE_MAX, 0, NULL) == -1);
    CHECK(memtrail_last_error_code() == MEMTRAIL_ERROR_BAD_ARGUMENT);
    CHECK(strstr(memtrail_last_error(), "past the 64-bit address space") != NULL);
    CHECK(memtrail_observe_malloc((void*)0x7000, 4096, 0, NULL) == 0);
    CHECK(memtrail_observe_malloc((void*)0x7000, 4096, 0, NULL) == -1);
    CHECK(memtrail_last_error_code() == MEMTRAIL_ERROR_BAD_ARGUMENT);
    CHECK(strstr(memtrail_last_error(), "overlaps the one at 0x7000") != NULL);
    CHECK(memtrail_observe_free((void*)0x7000, 0) == 0);
    CHECK(memtrail_observe_free((void*)0x7000, 0) == -1); /* freed once only: it was added once */
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

    /* Statistics with PyTorch's names, as JSON; their resets. */
    const char* stats = memtrail_memory_stats_json(0);
    CHECK(stats != NULL && stats[0] == '{');
    CHECK(strstr(stats, "\"allocated_bytes.all.current\": 512,") != NULL);
    CHECK(strstr(stats, "\"num_ooms\": 1,") != NULL);
    CHECK(memtrail_reset_peak_memory_stats(-1) == 0);
    CHECK(memtrail_reset_accumulated_memory_stats(0) == 0);
    stats = memtrail_memory_stats_json(0);
    CHECK(strstr(stats, "\"allocated_bytes.all.allocated\": 0,") != NULL);
    CHECK(strstr(stats, "\"allocated_bytes.all.peak\": 512,") != NULL);
    CHECK(memtrail_memory_stats_json(4) == NULL);
    CHECK(memtrail_last_error_code() == MEMTRAIL_ERROR_BAD_ARGUMENT);
    CHECK(memtrail_reset_peak_memory_stats(4) == -1);

    /* The garbage collector: on pressure (reserved 59% of the device, all of it allocated: a
     * full collection), then once more before an allocation would fail. No OOM dumps now. */
    snprintf(path, sizeof path, "%s/c-oom-%d-0.memtrail", folder, (int)getpid());
    CHECK(unlink(path) == 0);
    CHECK(memtrail_set_oom_dump(NULL) == 0);
    CHECK(memtrail_set_allocator_config("") == 0);
    CHECK(memtrail_set_memory_fraction(1.0, 0) == 0);
    CHECK(memtrail_set_collect_callback(collect, &collector_token) == 0);
    held_by_collector = memtrail_malloc((ssize_t)600 << 20, 0, NULL);
    CHECK(held_by_collector != NULL);
    CHECK(collections_by_pressure[MEMTRAIL_PRESSURE_FULL] == 0);
    void* large = memtrail_malloc((ssize_t)600 << 20, 0, NULL);
    CHECK(large != NULL);
    CHECK(collections_by_pressure[MEMTRAIL_PRESSURE_FULL] == 1);
    CHECK(collections_by_pressure[MEMTRAIL_PRESSURE_LIGHT] == 0);
    CHECK(memtrail_set_allocator_config("callback_reserved_rate:1") == 0); /* never on pressure */
    held_by_collector = memtrail_malloc((ssize_t)300 << 20, 0, NULL);
    CHECK(held_by_collector != NULL);
    void* last_chance = memtrail_malloc((ssize_t)300 << 20, 0, NULL);
    CHECK(last_chance != NULL);
    CHECK(collections_by_pressure[MEMTRAIL_PRESSURE_FULL] == 2);
    /* Recovered before failing: no error was thrown, so no OOM is counted (PyTorch's num_ooms
     * counts the errors thrown). */
    CHECK(strstr(memtrail_memory_stats_json(0), "\"num_ooms\": 0,") != NULL); /* since the reset */
    CHECK(!file_exists(path));
    /* A last collection that frees too little: the allocation fails once, counted once, one dump
     * (it counted 2 OOMs and wrote 2 dumps, issue 31). */
    held_by_collector = memtrail_malloc(1 << 20, 0, NULL);
    CHECK(held_by_collector != NULL);
    char prefix[64];
    snprintf(prefix, sizeof prefix, "c-last-%d-", (int)getpid());
    snprintf(path, sizeof path, "%s/%s%%t.memtrail", folder, prefix);
    CHECK(memtrail_set_oom_dump(path) == 0);
    CHECK(memtrail_malloc((ssize_t)900 << 20, 0, NULL) == NULL);
    CHECK(memtrail_last_error_code() == MEMTRAIL_ERROR_OUT_OF_MEMORY);
    CHECK(collections_by_pressure[MEMTRAIL_PRESSURE_FULL] == 3);
    CHECK(strstr(memtrail_memory_stats_json(0), "\"num_ooms\": 1,") != NULL);
    CHECK(files_starting_with(folder, prefix) == 1);
    CHECK(memtrail_set_oom_dump(NULL) == 0);
    CHECK(memtrail_set_collect_callback(NULL, NULL) == 0);
    CHECK(memtrail_malloc((ssize_t)300 << 20, 0, NULL) == NULL);
    CHECK(memtrail_last_error_code() == MEMTRAIL_ERROR_OUT_OF_MEMORY);
    CHECK(collections_by_pressure[MEMTRAIL_PRESSURE_FULL] == 3);
    CHECK(strstr(memtrail_memory_stats_json(0), "\"num_ooms\": 2,") != NULL);
    memtrail_free(large, 0, 0, NULL);
    memtrail_free(last_chance, 0, 0, NULL);

    /* The signal dump, moved to another signal, then switched off. */
    snprintf(path, sizeof path, "%s/c-signal2-%%p.memtrail", folder);
    CHECK(memtrail_set_signal_dump(SIGUSR2, path) == 0);
    CHECK(raise(SIGUSR2) == 0);
    snprintf(path, sizeof path, "%s/c-signal2-%d.memtrail", folder, (int)getpid());
    CHECK(wait_for_file(path));
    CHECK(memtrail_set_signal_dump(0, NULL) == 0);
    CHECK(memtrail_set_signal_dump(-1, "x.memtrail") == -1);
    CHECK(memtrail_last_error_code() == MEMTRAIL_ERROR_BAD_ARGUMENT);
    CHECK(memtrail_set_signal_dump(SIGSEGV, "x.memtrail") == -1);
    CHECK(strstr(memtrail_last_error(), "SIGUSR1, SIGUSR2 or a real-time signal") != NULL);

    CHECK(memtrail_clear_memory_history() == 0);
    CHECK(memtrail_record_memory_history(NULL, NULL, NULL, 0) == 0);
    memtrail_free(b, 512, 0, NULL);
    CHECK(strcmp(memtrail_last_error(), "") == 0);
    puts("c api: all checks passed");
    return 0;
}
