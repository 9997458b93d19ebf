// record_and_dump: record an allocator's history with native stacks and write a snapshot.
//
// It runs anywhere: the "GPU" is memtrail's simulated device, which hands out addresses without
// touching memory. A toy training loop allocates activations and gradients, marks its phases,
// and the recorder writes everything it saw to a snapshot that `memtrail` and the viewer open.
//
//   build/bin/sample_record_and_dump [output.memtrail]
//   memtrail-viewer output.memtrail
//
// Names ending in ".pickle" give PyTorch's format instead (torch.cuda.memory._dump_snapshot's),
// which https://pytorch.org/memory_viz also opens.

#include <cstdio>
#include <string>
#include <vector>

#include "memtrail/core/simulated_device.hpp"
#include "memtrail/recorder/recorder.hpp"

namespace {

constexpr uint64_t MiB = 1ull << 20;

// A layer keeps its activation until the backward pass.
memtrail::device_address forward_layer(memtrail::recorder::recorder& history, uint64_t width) {
    return history.allocate(width * 4 * MiB, 0);
}

void train_step(memtrail::recorder::recorder& history, int step) {
    // Every entry this thread records from now on carries the step: the viewer shows it.
    memtrail::recorder::recorder::set_thread_metadata("step " + std::to_string(step));

    history.range_start("forward");
    std::vector<memtrail::device_address> activations;
    for (uint64_t layer = 1; layer <= 6; ++layer) {
        activations.push_back(forward_layer(history, layer));
    }
    history.range_end("forward");

    history.range_start("backward");
    for (auto it = activations.rbegin(); it != activations.rend(); ++it) {
        const memtrail::device_address gradient = history.allocate(2 * MiB, 0);
        history.free(*it);
        history.free(gradient);
    }
    history.range_end("backward");
    history.marker("optimizer step");
}

}  // namespace

int main(int argc, char** argv) {
    const std::string path = argc > 1 ? argv[1] : "record_and_dump.memtrail";

    // One simulated 80 GiB device behind memtrail's caching allocator (PyTorch's rules).
    memtrail::simulated_device gpu;
    memtrail::caching_allocator allocator({&gpu});

    // The recorder sits in front of the allocator: allocate and free through it.
    memtrail::recorder::recorder history(allocator);
    memtrail::recorder::history_options options;  // enabled "all", context "all", native stacks
    options.max_entries = 100'000;                // older entries drop out (and are counted)
    history.record_memory_history(options);

    for (int step = 0; step < 3; ++step) {
        train_step(history, step);
    }

    history.dump_snapshot(path);
    std::printf("snapshot written to %s\n", path.c_str());
    return 0;
}
