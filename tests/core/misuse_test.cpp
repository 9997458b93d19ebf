// Bad input gets a clear error and leaves the allocator exactly as it was.

#include <gtest/gtest.h>

#include "memtrail/core/caching_allocator.hpp"
#include "memtrail/core/simulated_device.hpp"

namespace memtrail {
namespace {

class Misuse : public ::testing::Test {
  protected:
    void expect_unchanged() {
        EXPECT_EQ(allocator.memory_stats(), before);
        EXPECT_EQ(allocator.check_consistency(), "");
    }
    void remember() { before = allocator.memory_stats(); }
    // Error: usage_error or the more precise class a caller can act on.
    template <typename Error = usage_error, typename F>
    void expect_usage_error(F f, const std::string& fragment) {
        try {
            f();
            FAIL() << "expected usage_error containing '" << fragment << "'";
        } catch (const Error& e) {
            EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
        }
    }
    simulated_device dev;
    device_allocator allocator{dev};
    std::map<std::string, int64_t> before;
};

TEST_F(Misuse, UnknownPointer) {
    const device_address x = allocator.allocate(1000);
    remember();
    expect_usage_error<unknown_pointer_error>([&] { allocator.free(x + 8); },
                                              "not an address this allocator handed out");
    expect_usage_error<unknown_pointer_error>([&] { allocator.free(0xdeadbeef); }, "0xdeadbeef");
    expect_usage_error<unknown_pointer_error>([&] { allocator.record_stream(0x1234, 3); },
                                              "record_stream");
    expect_unchanged();
}

TEST_F(Misuse, DoubleFree) {
    const device_address x = allocator.allocate(1000);
    const device_address y = allocator.allocate(1000);
    allocator.free(x);
    remember();
    expect_usage_error<unknown_pointer_error>([&] { allocator.free(x); }, "double free");
    expect_unchanged();
    allocator.free(y);
}

TEST_F(Misuse, ZeroAndAbsurdSizes) {
    remember();
    expect_usage_error([&] { allocator.allocate(0); }, "0 bytes");
    expect_usage_error([&] { allocator.allocate(1ull << 60); }, "absurd");
    expect_usage_error([&] { allocator.allocate(static_cast<uint64_t>(-1)); }, "absurd");
    expect_unchanged();
    // Large but sane requests go down the normal path and fail as out of memory.
    EXPECT_THROW(allocator.allocate(1ull << 50), out_of_memory_error);
    EXPECT_EQ(allocator.check_consistency(), "");
}

TEST_F(Misuse, BadMemoryFraction) {
    expect_usage_error([&] { allocator.set_memory_fraction(1.5); }, "0.0 to 1.0");
    expect_usage_error([&] { allocator.set_memory_fraction(-0.1); }, "0.0 to 1.0");
}

// Simulated device `index`, handing out addresses from `base` on.
simulated_device_options device_from(int index, device_address base) {
    simulated_device_options options;
    options.index = index;
    options.base_address = base;
    return options;
}

const device_address first_device_base = simulated_device_options{}.base_address;

TEST(MultiDevice, OneAllocatorPerDeviceAndWrongDeviceFreesAreRejected) {
    simulated_device d0(device_from(0, first_device_base)), d1(device_from(1, 0x7e0000000000ull));
    caching_allocator allocator({&d0, &d1});
    const device_address a = allocator.allocate(4096, 0);
    const device_address b = allocator.allocate(4096, 1);
    EXPECT_EQ(allocator.device_of(a), 0);
    EXPECT_EQ(allocator.device_of(b), 1);
    try {
        allocator.free(b, 0);
        FAIL() << "expected usage_error";
    } catch (const usage_error& e) {
        EXPECT_NE(std::string(e.what()).find("allocated on device 1"), std::string::npos)
            << e.what();
    }
    EXPECT_EQ(allocator.device_of(b), 1);  // still allocated
    EXPECT_THROW(allocator.allocate(10, 2), usage_error);
    allocator.free(a, 0);
    allocator.free(b);  // no device given: found by address
    EXPECT_EQ(allocator.on(0).memory_stats().at("allocation.all.current"), 0);
    EXPECT_EQ(allocator.on(1).memory_stats().at("allocation.all.current"), 0);
}

// A free that names no device is sent to the only device whose segments lie around the address,
// without a lock; where two devices' segments interleave, the owner is looked up under the locks.
TEST(MultiDevice, FreesThatNameNoDeviceReachTheOwnerWhereverTheSegmentsLie) {
    // Device 1's addresses lie inside device 0's span once that grows.
    simulated_device d0(device_from(0, first_device_base)),
        d1(device_from(1, first_device_base + (4ull << 30)));
    caching_allocator allocator({&d0, &d1});
    const device_address a = allocator.allocate(4096, 0);
    const device_address b = allocator.allocate(4096, 1);
    EXPECT_EQ(allocator.device_for(a), 0);
    EXPECT_EQ(allocator.device_for(b), 1);
    EXPECT_EQ(allocator.device_for(0x1000), -1);  // below every segment
    EXPECT_THROW(allocator.free(0x1000), usage_error);

    const device_address big = allocator.allocate(8ull << 30, 0);  // device 0's span covers b's
    ASSERT_GT(big + (8ull << 30), b);
    EXPECT_EQ(allocator.device_for(b), 1);
    EXPECT_EQ(allocator.device_for(big), 0);
    allocator.free(b);
    allocator.free(big);
    allocator.free(a);
    EXPECT_EQ(allocator.on(0).memory_stats().at("allocation.all.current"), 0);
    EXPECT_EQ(allocator.on(1).memory_stats().at("allocation.all.current"), 0);
    EXPECT_EQ(allocator.on(0).check_consistency(), "");
    EXPECT_EQ(allocator.on(1).check_consistency(), "");
}

// With one device a free that names none goes to it, and an address it never handed out is
// refused there, changing nothing.
TEST(MultiDevice, WithOneDeviceAFreeThatNamesNoneGoesToIt) {
    simulated_device d0;
    caching_allocator allocator({&d0});
    const device_address a = allocator.allocate(4096, 0);
    EXPECT_EQ(allocator.device_for(a), 0);
    EXPECT_EQ(allocator.device_for(0x1000), 0);
    EXPECT_THROW(allocator.free(0x1000), usage_error);
    EXPECT_THROW(allocator.free(a + 512), usage_error);
    EXPECT_EQ(allocator.on(0).memory_stats().at("allocation.all.current"), 1);
    allocator.free(a);
    EXPECT_EQ(allocator.on(0).memory_stats().at("allocation.all.current"), 0);
}

// Only unknown_device asks for the owner to be looked up: any other device that does not exist,
// negative or too large, is refused (the message says where the block lives) and the block stays
// allocated.
TEST(MultiDevice, FreeOnANegativeDeviceIsRefusedLikeATooLargeOne) {
    simulated_device d0;
    caching_allocator allocator({&d0});
    const device_address a = allocator.allocate(4096, 0);
    for (const int bad : {7, -3, -2}) {
        try {
            allocator.free(a, bad);
            FAIL() << "a free on device " << bad << " was accepted";
        } catch (const usage_error& e) {
            EXPECT_NE(std::string(e.what()).find("on device " + std::to_string(bad) +
                                                 ", but it was allocated on device 0"),
                      std::string::npos)
                << e.what();
        }
        EXPECT_EQ(allocator.on(0).memory_stats().at("allocation.all.current"), 1) << bad;
    }
    allocator.free(a, unknown_device);
    EXPECT_EQ(allocator.on(0).memory_stats().at("allocation.all.current"), 0);
}

}  // namespace
}  // namespace memtrail
