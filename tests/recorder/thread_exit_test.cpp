// Frees made while a thread is being torn down, after memtrail's own thread_local objects are
// destroyed: another library's thread-exit cleanup releasing its tensors (PyTorch's
// distributed backend does this). Recording with stacks must stay safe then; under
// AddressSanitizer this test caught a per-thread stack cache written after its destruction.

#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "memtrail/core/simulated_device.hpp"
#include "memtrail/recorder/recorder.hpp"

namespace {

using namespace memtrail;

// What a library keeps per thread and frees at thread exit.
struct per_thread_buffers {
    recorder::recorder* history = nullptr;
    std::vector<device_address> held;
    ~per_thread_buffers() {
        for (const device_address address : held) {
            history->free(address, 0);
        }
    }
};

TEST(thread_exit, frees_from_thread_local_destructors_record_safely) {
    simulated_device gpu;
    caching_allocator allocator({&gpu});
    recorder::recorder history(allocator);
    recorder::history_options options;
    options.enabled = recorder::record_mode::all;
    options.context = recorder::context_mode::all;
    // Frame pointers walk out of thread-exit cleanup on every machine (this test is built with
    // them); what is checked is the stack cache, not the unwinder.
    options.stack_unwinder = recorder::unwinder::frame_pointer;
    history.record_memory_history(options);

    std::thread worker([&history] {
        // Constructed before memtrail's per-thread state, so destroyed after it.
        thread_local per_thread_buffers buffers;
        buffers.history = &history;
        for (int i = 0; i < 32; ++i) {
            buffers.held.push_back(history.allocate(uint64_t{1} << (10 + i % 12), 0));
        }
    });
    worker.join();

    EXPECT_EQ(allocator.on(0).memory_stats().at("allocation.all.current"), 0);
    size_t frees = 0;
    const snapshot::snapshot taken = history.take_snapshot();
    for (const auto& entry : taken.find_trace(0)->entries) {
        frees += entry.kind == snapshot::action::free_requested ? 1 : 0;
    }
    EXPECT_EQ(frees, 32u);
    // The frees made during the thread's teardown kept their stacks.
    size_t with_stack = 0;
    for (const auto& entry : taken.find_trace(0)->entries) {
        with_stack += entry.kind == snapshot::action::free_requested && entry.stack != 0 ? 1 : 0;
    }
    EXPECT_EQ(with_stack, 32u);
}

}  // namespace
