// The cost counters (memtrail/stacks/cost_counters.hpp), built twice: as the build has them
// (test_cost_counters: by default off, where a zone is an empty type) and with them on
// (test_cost_counters_on), where zones add ticks, counts add up over threads and the file lists
// every counter.

#include "memtrail/stacks/cost_counters.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <thread>
#include <type_traits>

namespace {

using memtrail::cost::counter;

#if MEMTRAIL_COST_COUNTERS

TEST(cost_counters, zones_add_ticks_and_counts_add_up_over_threads) {
    ASSERT_TRUE(memtrail::cost::built);
    {
        memtrail::cost::zone timed(counter::push);
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    memtrail::cost::add(counter::walks, 3);
    std::thread([] { memtrail::cost::add(counter::walks, 4); }).join();
    const auto& all = memtrail::cost::counters();
    EXPECT_EQ(all.sum(counter::walks), 7u);

    const auto path = std::filesystem::temp_directory_path() /
                      ("memtrail_cost_counters_test." + std::to_string(getpid()));
    ASSERT_TRUE(all.write(path.string()));
    std::ifstream file(path);
    std::map<std::string, double> values;
    std::string name;
    double value = 0;
    while (file >> name >> value) {
        values[name] = value;
    }
    std::filesystem::remove(path);
    // The zone's ticks, in the file's nanoseconds a tick, hold the 2 ms it slept.
    EXPECT_GE(values["push"] * values["ns_per_tick"], 2e6);
    EXPECT_EQ(values["walks"], 7.0);
    EXPECT_EQ(values.size(), std::size(memtrail::cost::counter_names) + 1);
}

#else

TEST(cost_counters, without_the_option_a_zone_is_nothing) {
    EXPECT_FALSE(memtrail::cost::built);
    static_assert(std::is_empty_v<memtrail::cost::zone>);
    static_assert(std::is_trivially_destructible_v<memtrail::cost::zone>);
    memtrail::cost::zone untimed(counter::push);
    memtrail::cost::add(counter::walks, 1);
    (void)untimed;
}

#endif

}  // namespace
