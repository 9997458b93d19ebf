// Writes the memtrail snapshot the viewer's tests open: a few training steps of a made-up model
// on a simulated 640 MiB device, recorded with native stacks, with annotations, a second stream
// whose frees wait for it (pending frees), and a last request that runs out of memory among
// free blocks scattered through the cache.
//
//   make_viewer_snapshot OUT.memtrail

#include <cstdint>
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "memtrail/core/caching_allocator.hpp"
#include "memtrail/core/simulated_device.hpp"
#include "memtrail/recorder/recorder.hpp"

namespace {

constexpr uint64_t mib = 1ull << 20;
constexpr memtrail::stream_handle side_stream = 7;

using memtrail::recorder::recorder;

// Each step function is its own frame in the recorded stacks.
[[gnu::noinline]] std::vector<uint64_t> load_weights(recorder& r) {
    std::vector<uint64_t> weights;
    for (int layer = 0; layer < 8; ++layer) {
        weights.push_back(r.allocate(12 * mib + static_cast<uint64_t>(layer) * 256 * 1024, 0));
        weights.push_back(r.allocate(4096 + static_cast<uint64_t>(layer) * 512, 0));
    }
    return weights;
}

[[gnu::noinline]] uint64_t attention(recorder& r, int layer) {
    const uint64_t scores = r.allocate(6 * mib + static_cast<uint64_t>(layer) * 64 * 1024, 0);
    const uint64_t out = r.allocate(3 * mib + 1000, 0);
    r.free(scores);
    return out;
}

[[gnu::noinline]] uint64_t mlp(recorder& r) {
    const uint64_t hidden = r.allocate(8 * mib, 0);
    const uint64_t out = r.allocate(2 * mib + 300, 0);
    r.free(hidden);
    return out;
}

[[gnu::noinline]] std::vector<uint64_t> forward(recorder& r) {
    r.range_start("forward");
    std::vector<uint64_t> saved;
    for (int layer = 0; layer < 8; ++layer) {
        saved.push_back(attention(r, layer));
        saved.push_back(mlp(r));
        saved.push_back(r.allocate(700 + static_cast<uint64_t>(layer) * 100, 0));
    }
    r.range_end("forward");
    return saved;
}

[[gnu::noinline]] std::vector<uint64_t> backward(recorder& r, std::vector<uint64_t>& saved) {
    r.range_start("backward");
    std::vector<uint64_t> grads;
    while (!saved.empty()) {
        grads.push_back(r.allocate(1 * mib + 4096, 0));
        r.free(saved.back());
        saved.pop_back();
    }
    r.range_end("backward");
    return grads;
}

// Gradients are reduced on a side stream: their memory is reused only when it is done.
[[gnu::noinline]] void reduce_gradients(recorder& r, memtrail::simulated_device& gpu,
                                        std::vector<uint64_t>& grads) {
    r.range_start("all_reduce");
    const uint64_t bucket = r.allocate(16 * mib, 0);
    for (const uint64_t g : grads) {
        r.allocator().record_stream(g, side_stream);
        r.free(g);
    }
    grads.clear();
    r.free(bucket);
    r.marker("reduce issued");
    gpu.complete_stream(side_stream);
    r.range_end("all_reduce");
}

[[gnu::noinline]] void train_step(recorder& r, memtrail::simulated_device& gpu, int step) {
    const std::string name = "step " + std::to_string(step);
    r.range_start(name);
    std::vector<uint64_t> saved = forward(r);
    std::vector<uint64_t> grads = backward(r, saved);
    reduce_gradients(r, gpu, grads);
    r.range_end(name);
}

// Fills the device with 6 MiB blocks (three to a 20 MiB segment), frees two of every three,
// then asks for 40 MiB: plenty is free in the cache, but in pieces inside segments that a live
// block keeps from being released. Returns false when that request does not fail.
[[gnu::noinline]] bool fragment_and_fail(recorder& r) {
    r.range_start("evaluate");
    std::vector<uint64_t> blocks;
    try {
        for (;;) {
            blocks.push_back(r.allocate(6 * mib, 0));
        }
    } catch (const memtrail::out_of_memory_error&) {
        // The device is full, as the rest needs it.
    }
    for (size_t i = 0; i < blocks.size(); ++i) {
        if (i % 3 != 1) {
            r.free(blocks[i]);
        }
    }
    bool failed = false;
    try {
        r.allocate(40 * mib, 0);
    } catch (const memtrail::out_of_memory_error&) {
        failed = true;
    }
    r.range_end("evaluate");
    return failed;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: make_viewer_snapshot OUT.memtrail\n");
        return 2;
    }
    try {
        memtrail::simulated_device_options options;
        options.capacity = 640 * mib;
        options.events_complete_immediately = false;
        memtrail::simulated_device gpu(options);
        memtrail::caching_allocator allocator({&gpu});
        recorder history(allocator);
        history.record_memory_history({});
        const std::vector<uint64_t> weights = load_weights(history);
        for (int step = 0; step < 4; ++step) {
            train_step(history, gpu, step);
        }
        if (!fragment_and_fail(history)) {
            std::fprintf(stderr,
                         "make_viewer_snapshot: the last request did not run out of "
                         "memory\n");
            return 1;
        }
        history.dump_snapshot(argv[1]);
        return 0;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "make_viewer_snapshot: %s\n", e.what());
        return 1;
    }
}
