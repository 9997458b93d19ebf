/* A C program using memtrail as installed: built against the install prefix with pkg-config and
 * with find_package(memtrail), and in a project that adds memtrail's source (install_test.sh).
 * It checks the version and the error codes a program acts on, records a few allocations on the
 * device MEMTRAIL_DEVICE names (the simulated one in the test), and writes a snapshot.
 * Usage: consumer SNAPSHOT */
#include <stdio.h>

#include <memtrail/memtrail.h>

static int failed(const char* what) {
    fprintf(stderr, "consumer: %s; last error %d: \"%s\"\n", what, memtrail_last_error_code(),
            memtrail_last_error());
    return 1;
}

int main(int argc, char** argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: %s SNAPSHOT\n", argv[0]);
        return 2;
    }
    if (memtrail_version() != MEMTRAIL_VERSION_NUMBER) {
        return failed("the library's version is not its header's");
    }

    if (memtrail_record_memory_history("all", "all", "native", 0) != 0) {
        return failed("recording did not start");
    }
    void* weights = memtrail_malloc((ssize_t)64 << 20, 0, NULL);
    void* activations = memtrail_malloc((ssize_t)3 << 20, 0, NULL);
    void* workspace = memtrail_malloc((ssize_t)1 << 20, 0, NULL);
    if (weights == NULL || activations == NULL || workspace == NULL) {
        return failed("an allocation failed");
    }
    memtrail_free(activations, (ssize_t)3 << 20, 0, NULL);
    if (memtrail_last_error_code() != MEMTRAIL_OK) {
        return failed("a free failed");
    }

    /* Failures a program can tell apart. */
    memtrail_free(activations, (ssize_t)3 << 20, 0, NULL);
    if (memtrail_last_error_code() != MEMTRAIL_ERROR_UNKNOWN_POINTER) {
        return failed("a double free is not an unknown pointer");
    }
    if (memtrail_malloc((ssize_t)1 << 50, 0, NULL) != NULL ||
        memtrail_last_error_code() != MEMTRAIL_ERROR_OUT_OF_MEMORY) {
        return failed("1 PiB did not run out of memory");
    }
    if (memtrail_dump_snapshot("/nonexistent-folder/snapshot.memtrail") != -1 ||
        memtrail_last_error_code() != MEMTRAIL_ERROR_IO) {
        return failed("a snapshot into a missing folder is not an I/O error");
    }

    if (memtrail_dump_snapshot(argv[1]) != 0) {
        return failed("the snapshot was not written");
    }
    printf("consumer: memtrail %s, snapshot written to %s\n", MEMTRAIL_VERSION_STRING, argv[1]);
    return 0;
}
