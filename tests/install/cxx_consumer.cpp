// A C++ program using memtrail's C++ API as installed: built through find_package(memtrail) and in
// a project that adds memtrail's source (install_test.sh). It records the same allocations as
// consumer.c on a simulated device and writes a snapshot. Usage: cxx_consumer SNAPSHOT

#include <cstdio>
#include <exception>

#include <memtrail/core/simulated_device.hpp>
#include <memtrail/recorder/recorder.hpp>

int main(int argc, char** argv) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: %s SNAPSHOT\n", argv[0]);
        return 2;
    }
    constexpr uint64_t MiB = 1ull << 20;
    memtrail::simulated_device_options device_options;
    device_options.capacity = 4096 * MiB;
    memtrail::simulated_device gpu(device_options);
    memtrail::caching_allocator allocator({&gpu});
    memtrail::recorder::recorder history(allocator);
    history.record_memory_history(memtrail::recorder::history_options{});

    history.allocate(64 * MiB, 0);
    const memtrail::device_address activations = history.allocate(3 * MiB, 0);
    history.allocate(1 * MiB, 0);
    history.free(activations);
    try {
        history.free(activations);
        std::fprintf(stderr, "cxx_consumer: a double free was accepted\n");
        return 1;
    } catch (const memtrail::unknown_pointer_error&) {
    }

    history.dump_snapshot(argv[1]);
    std::printf("cxx_consumer: snapshot written to %s\n", argv[1]);
    return 0;
}
