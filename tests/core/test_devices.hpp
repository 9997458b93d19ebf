#pragma once
// The devices the device-independent rules run on: always the simulated one, and a real GPU
// where memtrail was built with CUDA and one is visible.

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "memtrail/core/simulated_device.hpp"
#ifdef MEMTRAIL_HAVE_CUDA
#include "memtrail/core/cuda_device.hpp"
#endif

namespace memtrail::testing {

inline std::unique_ptr<device> make_test_device(const std::string& kind) {
    if (kind == "cuda") {
#ifdef MEMTRAIL_HAVE_CUDA
        if (cuda_device::count() > 0) {
            return std::make_unique<cuda_device>(0);
        }
#endif
        return nullptr;
    }
    simulated_device_options options;
    options.capacity = 80ull << 30;
    return std::make_unique<simulated_device>(options);
}

inline std::string device_kind_name(const ::testing::TestParamInfo<std::string>& info) {
    return info.param;
}

constexpr uint64_t KiB = 1ull << 10;
constexpr uint64_t MiB = 1ull << 20;
constexpr uint64_t GiB = 1ull << 30;

}  // namespace memtrail::testing

// Skips a parameterized test cleanly when its device is not present.
#define MEMTRAIL_REQUIRE_DEVICE(dev_ptr, kind)                                            \
    if (!(dev_ptr)) {                                                                     \
        GTEST_SKIP() << "no " << (kind) << " device here (built without CUDA or no GPU)"; \
    }
