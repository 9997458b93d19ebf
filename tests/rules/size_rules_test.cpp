// The size rules and pool counters as PyTorch's CUDACachingAllocator applies them.

#include <gtest/gtest.h>

#include <vector>

#include "memtrail/rules/size_rules.hpp"
#include "memtrail/rules/statistics.hpp"

namespace memtrail::size_rules {
namespace {

constexpr uint64_t KiB = 1ull << 10;
constexpr uint64_t MiB = 1ull << 20;
constexpr uint64_t GiB = 1ull << 30;

const std::vector<uint64_t> no_divisions(roundup_interval_count, 0);

TEST(SizeRules, RequestsRoundToWhole512ByteBlocks) {
    EXPECT_EQ(round_size(0, no_divisions), 512u);
    EXPECT_EQ(round_size(1, no_divisions), 512u);
    EXPECT_EQ(round_size(512, no_divisions), 512u);
    EXPECT_EQ(round_size(513, no_divisions), 1024u);
    EXPECT_EQ(round_size(MiB + 1, no_divisions), MiB + 512);
}

TEST(SizeRules, DivisionsRoundToEqualStepsBetweenPowersOfTwo) {
    const std::vector<uint64_t> four(roundup_interval_count, 4);
    EXPECT_EQ(round_size(MiB + 1, four), MiB + 256 * KiB);
    EXPECT_EQ(round_size(MiB + 256 * KiB, four), MiB + 256 * KiB);
    EXPECT_EQ(round_size(2 * MiB, four), 2 * MiB);
    // Requests of at most 512 bytes per division keep the plain rounding.
    EXPECT_EQ(round_size(1200, four), 1536u);
    // A division count that is no power of two steps by its largest power of two below.
    const std::vector<uint64_t> three(roundup_interval_count, 3);
    EXPECT_EQ(round_size(5 * MiB, three), 6 * MiB);
}

TEST(SizeRules, EachPowerOfTwoIntervalHasItsOwnDivisions) {
    EXPECT_EQ(roundup_interval(0), 0u);
    EXPECT_EQ(roundup_interval(2 * MiB - 1), 0u);
    EXPECT_EQ(roundup_interval(2 * MiB), 1u);
    EXPECT_EQ(roundup_interval(32 * GiB - 1), 14u);
    EXPECT_EQ(roundup_interval(32 * GiB), 15u);
    EXPECT_EQ(roundup_interval(UINT64_MAX), 15u);
    std::vector<uint64_t> only_second(roundup_interval_count, 0);
    only_second[1] = 2;
    EXPECT_EQ(round_size(MiB + MiB / 2 + 1, only_second), MiB + MiB / 2 + 512);
    EXPECT_EQ(round_size(2 * MiB + 1, only_second), 3 * MiB);
}

TEST(SizeRules, PoolAndSegmentSizeFollowTheRoundedRequest) {
    EXPECT_TRUE(is_small_request(MiB));
    EXPECT_FALSE(is_small_request(MiB + 512));
    EXPECT_EQ(segment_size_for(512), 2 * MiB);
    EXPECT_EQ(segment_size_for(MiB), 2 * MiB);
    EXPECT_EQ(segment_size_for(MiB + 512), 20 * MiB);
    EXPECT_EQ(segment_size_for(10 * MiB - 512), 20 * MiB);
    EXPECT_EQ(segment_size_for(10 * MiB), 10 * MiB);
    EXPECT_EQ(segment_size_for(11 * MiB), 12 * MiB);
}

TEST(SizeRules, SplitsLeaveABlockTheirPoolCanUse) {
    const bool small = true;
    const bool expandable = true;
    EXPECT_TRUE(should_split(small, !expandable, 512, 512, unlimited));
    EXPECT_FALSE(should_split(small, !expandable, 512, 511, unlimited));
    EXPECT_FALSE(should_split(!small, !expandable, 2 * MiB, MiB, unlimited));
    EXPECT_TRUE(should_split(!small, !expandable, 2 * MiB, MiB + 512, unlimited));
    EXPECT_TRUE(should_split(!small, expandable, 2 * MiB, 512, unlimited));
    // Oversize blocks are never split, unless they are expandable.
    EXPECT_FALSE(should_split(!small, !expandable, 64 * MiB, 64 * MiB, 64 * MiB));
    EXPECT_TRUE(should_split(!small, !expandable, 64 * MiB - 512, 64 * MiB, 64 * MiB));
    EXPECT_TRUE(should_split(!small, expandable, 64 * MiB, 512, 64 * MiB));
}

TEST(SizeRules, OversizeStartsAtMaxSplitSizeWhichStatisticsWriteAsMinusOneWhenUnlimited) {
    EXPECT_FALSE(is_oversize(UINT64_MAX - 1, unlimited));
    EXPECT_TRUE(is_oversize(64 * MiB, 64 * MiB));
    EXPECT_FALSE(is_oversize(64 * MiB - 1, 64 * MiB));
    EXPECT_EQ(max_split_size_statistic(unlimited), -1);
    EXPECT_EQ(max_split_size_statistic(64 * MiB), int64_t(64 * MiB));
    EXPECT_EQ(max_split_size_from_statistic(-1), unlimited);
    EXPECT_EQ(max_split_size_from_statistic(int64_t(64 * MiB)), 64 * MiB);
}

TEST(PoolStats, AChangeToAPoolChangesTheAggregateToo) {
    stat_array counters;
    for_pool_stats(counters, pool_stat_type(true), [](stat& s) { s.increase(3); });
    for_pool_stats(counters, pool_stat_type(false), [](stat& s) { s.increase(5); });
    EXPECT_EQ(counters[size_t(stat_type::aggregate)].current, 8);
    EXPECT_EQ(counters[size_t(stat_type::small_pool)].current, 3);
    EXPECT_EQ(counters[size_t(stat_type::large_pool)].current, 5);
}

}  // namespace
}  // namespace memtrail::size_rules
