// The recorder over two devices: each keeps its own history, and a process that uses only the
// second (rank 1 of a job sees every GPU of its host) dumps and reloads cleanly.

#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "memtrail/core/simulated_device.hpp"
#include "memtrail/recorder/recorder.hpp"
#include "memtrail/snapshot/load.hpp"
#include "sanitizer_skips.hpp"

namespace {

using namespace memtrail;

constexpr uint64_t MiB = 1ull << 20;

simulated_device_options device_options(int index) {
    simulated_device_options options;
    options.index = index;
    options.base_address = 0x7f0000000000ull - static_cast<uint64_t>(index) * (1ull << 40);
    return options;
}

class two_devices : public ::testing::Test {
  protected:
    simulated_device gpu0{device_options(0)};
    simulated_device gpu1{device_options(1)};
    caching_allocator allocator{{&gpu0, &gpu1}};
    recorder::recorder history{allocator};

    void record_everything(recorder::unwinder stack_unwinder = recorder::unwinder::libunwind) {
        recorder::history_options options;
        options.enabled = recorder::record_mode::all;
        options.context = recorder::context_mode::all;
        options.stack_unwinder = stack_unwinder;
        history.record_memory_history(options);
    }
};

class two_devices_with_unwinder : public two_devices,
                                  public ::testing::WithParamInterface<recorder::unwinder> {};

TEST_F(two_devices, only_the_second_device_used) {
    record_everything();
    std::vector<device_address> live;
    for (int i = 0; i < 200; ++i) {
        live.push_back(history.allocate((i % 7 + 1) * MiB, 1));
        if (i % 3 == 0) {
            history.free(live.back(), 1);
            live.pop_back();
        }
    }
    const auto folder = std::filesystem::path(::testing::TempDir());
    for (const char* name : {"second_device.memtrail", "second_device.pickle"}) {
        history.dump_snapshot(folder / name);
        const auto file = snapshot::load_snapshot(folder / name);
        const snapshot::snapshot& loaded = *file.snapshot;
        const snapshot::device_trace* trace1 = loaded.find_trace(1);
        ASSERT_NE(trace1, nullptr) << name;
        size_t allocs = 0;
        size_t frees = 0;
        for (const auto& entry : trace1->entries) {
            allocs += entry.kind == snapshot::action::alloc ? 1 : 0;
            frees += entry.kind == snapshot::action::free_requested ? 1 : 0;
        }
        EXPECT_EQ(allocs, 200u) << name;
        EXPECT_EQ(frees, 67u) << name;
        // The first device saw no allocation (its trace holds the dump's own snapshot mark).
        if (const snapshot::device_trace* trace0 = loaded.find_trace(0)) {
            for (const auto& entry : trace0->entries) {
                EXPECT_NE(entry.kind, snapshot::action::alloc) << name;
            }
        }
    }
    for (const device_address address : live) {
        history.free(address, 1);
    }
}

TEST_P(two_devices_with_unwinder, threads_on_each_device_record_side_by_side) {
    MEMTRAIL_SKIP_LIBUNWIND_THREADS_UNDER_TSAN(GetParam());
    record_everything(GetParam());
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t) {
        threads.emplace_back([this, t] {
            const int device = t % 2;
            for (int i = 0; i < 2000; ++i) {
                history.free(history.allocate((i % 5 + 1) * MiB, device), device);
            }
        });
    }
    for (auto& thread : threads) {
        thread.join();
    }
    const snapshot::snapshot s = history.take_snapshot();
    for (int device = 0; device < 2; ++device) {
        const snapshot::device_trace* trace = s.find_trace(device);
        ASSERT_NE(trace, nullptr);
        size_t allocs = 0;
        for (const auto& entry : trace->entries) {
            allocs += entry.kind == snapshot::action::alloc ? 1 : 0;
            EXPECT_EQ(entry.device, device);
        }
        EXPECT_EQ(allocs, 4000u);
    }
}

INSTANTIATE_TEST_SUITE_P(unwinders, two_devices_with_unwinder,
                         ::testing::Values(recorder::unwinder::libunwind,
                                           recorder::unwinder::frame_pointer),
                         [](const ::testing::TestParamInfo<recorder::unwinder>& parameter) {
                             return std::string(recorder::unwinder_name(parameter.param));
                         });

}  // namespace
