// Millions of random operations under every configuration, with streams, pending cross-stream
// frees and injected device failures; after every step the blocks must tile their segments,
// no two free neighbours may remain, and every statistic must equal a recount from scratch.

#include <gtest/gtest.h>

#include <ostream>
#include <random>
#include <sstream>
#include <string>

#include "memtrail/core/caching_allocator.hpp"
#include "memtrail/core/simulated_device.hpp"
#include "test_name.hpp"

namespace memtrail {
namespace {

struct random_run {
    const char* conf;
    double fraction;  // 0: none
    uint64_t steps;
    uint64_t check_every;  // 1: after every step
};

// "garbage_collection_threshold_0_5_fraction_0_3_100000_steps"
std::string name_of(const random_run& r) {
    std::ostringstream fraction;
    fraction << r.fraction;
    return testing::conf_name_part(r.conf) +
           (r.fraction > 0 ? "_fraction_" + testing::test_name_part(fraction.str()) : "") + "_" +
           std::to_string(r.steps) + "_steps";
}

// gtest lists the parameter beside the test's name; without this, as its raw bytes.
void PrintTo(const random_run& r, std::ostream* out) {
    *out << "conf \"" << r.conf << "\", memory fraction " << r.fraction << ", " << r.steps
         << " steps, checked every " << r.check_every;
}

void run(const random_run& r, uint64_t seed) {
    simulated_device_options o;
    o.capacity = 4ull << 30;
    simulated_device dev(o);
    dev.set_events_complete_immediately(false);
    dev.set_failure_probability(0.002, seed);
    device_allocator a(dev, allocator_config::parse(r.conf));
    if (r.fraction > 0) {
        a.set_memory_fraction(r.fraction);
    }
    std::mt19937_64 rng(seed);
    std::vector<device_address> live(96, 0);
    const stream_handle streams[] = {0, 7, 9};
    uint64_t ooms = 0;
    for (uint64_t step = 0; step < r.steps; ++step) {
        const uint64_t op = rng() % 100;
        device_address& slot = live[rng() % live.size()];
        if (op < 80) {
            if (slot) {
                if (rng() % 8 == 0) {
                    a.record_stream(slot, streams[rng() % 3]);
                }
                a.free(slot);
                slot = 0;
            } else {
                // Log-uniform sizes from 1 B to 256 MiB.
                const double exponent = std::uniform_real_distribution<double>(0, 28)(rng);
                const auto size = static_cast<uint64_t>(std::exp2(exponent));
                try {
                    slot = a.allocate(size, streams[rng() % 3]);
                } catch (const out_of_memory_error&) {
                    ++ooms;
                }
            }
        } else if (op < 97) {
            dev.complete_stream(streams[rng() % 3]);
        } else if (op < 99) {
            a.process_events();
        } else {
            a.empty_cache();
        }
        if (step % r.check_every == 0) {
            const std::string problems = a.check_consistency();
            ASSERT_EQ(problems, "")
                << "after step " << step << " of '" << r.conf << "' seed " << seed;
        }
    }
    for (device_address& slot : live) {
        if (slot) {
            a.free(slot);
        }
    }
    dev.complete_all_events();
    a.empty_cache();
    ASSERT_EQ(a.check_consistency(), "");
    const auto stats = a.memory_stats();
    EXPECT_EQ(stats.at("allocation.all.current"), 0);
    EXPECT_EQ(stats.at("active_bytes.all.current"), 0);
    EXPECT_EQ(stats.at("reserved_bytes.all.current"), 0);
    EXPECT_EQ(stats.at("allocation.all.allocated"), stats.at("allocation.all.freed"));
    EXPECT_EQ(stats.at("num_ooms"), static_cast<int64_t>(ooms));
    EXPECT_EQ(dev.used_bytes(), 0u);
}

class Randomized : public ::testing::TestWithParam<random_run> {};

TEST_P(Randomized, InvariantsHoldAfterEveryStep) {
    for (uint64_t seed : {1u, 2u}) {
        run(GetParam(), seed);
    }
}

INSTANTIATE_TEST_SUITE_P(
    Configs, Randomized,
    ::testing::Values(
        random_run{"", 0, 150000, 1}, random_run{"max_split_size_mb:64", 0, 150000, 1},
        random_run{"roundup_power2_divisions:[1:2,64:4,>:8]", 0, 100000, 1},
        random_run{"expandable_segments:True", 0, 150000, 1},
        random_run{"garbage_collection_threshold:0.5", 0.3, 100000, 1},
        random_run{"max_split_size_mb:32,garbage_collection_threshold:0.6", 0.5, 100000, 1},
        // Long runs: millions of operations, checked every 1000 steps.
        random_run{"", 0, 2000000, 1000}, random_run{"expandable_segments:True", 0, 1000000, 1000}),
    [](const ::testing::TestParamInfo<random_run>& param) { return name_of(param.param); });

}  // namespace
}  // namespace memtrail
