// Per-pixel buckets give the true min and max of the positions they cover, and the Active
// Memory Timeline's largest allocations plus the summarized rest add up to the curve.

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <random>

#include "memtrail/analysis/timeline.hpp"
#include "reference_allocator.hpp"

namespace memtrail::analysis {
namespace {

device_model random_model(uint32_t seed, int operations) {
    auto snap = std::make_shared<snapshot::snapshot>();
    testing::reference_allocator allocator(*snap);
    testing::run_random_workload(allocator, testing::make_stacks(*snap, 4), seed, operations);
    allocator.finish();
    return device_model::build(snap, 0);
}

std::pair<uint64_t, uint64_t> brute_min_max(const std::vector<uint64_t>& v, size_t first,
                                            size_t last) {
    return {*std::min_element(v.begin() + static_cast<ptrdiff_t>(first),
                              v.begin() + static_cast<ptrdiff_t>(last)),
            *std::max_element(v.begin() + static_cast<ptrdiff_t>(first),
                              v.begin() + static_cast<ptrdiff_t>(last))};
}

TEST(timeline, min_max_of_any_range_is_exact) {
    const device_model model = random_model(11, 3000);
    const auto& curve = model.values(series::active);
    std::mt19937 random(1);
    for (int i = 0; i < 2000; ++i) {
        size_t a = std::uniform_int_distribution<size_t>(0, curve.size() - 1)(random);
        size_t b = std::uniform_int_distribution<size_t>(0, curve.size() - 1)(random);
        if (a > b) {
            std::swap(a, b);
        }
        EXPECT_EQ(model.min_max(series::active, a, b + 1), brute_min_max(curve, a, b + 1))
            << a << ".." << b;
    }
    EXPECT_EQ(model.min_max(series::active, 5, 5), (std::pair<uint64_t, uint64_t>{0, 0}));
}

TEST(timeline, position_buckets_cover_the_range_with_true_extremes) {
    const device_model model = random_model(12, 2000);
    const auto& curve = model.values(series::reserved);
    const auto buckets = buckets_by_position(model, series::reserved, 10, curve.size(), 333);
    ASSERT_EQ(buckets.size(), 333u);
    EXPECT_EQ(buckets.front().first, 10u);
    EXPECT_EQ(buckets.back().last, curve.size());
    for (size_t i = 0; i < buckets.size(); ++i) {
        if (i > 0) {
            EXPECT_EQ(buckets[i].first, buckets[i - 1].last);
        }
        const auto [low, high] = brute_min_max(curve, buckets[i].first, buckets[i].last);
        EXPECT_EQ(buckets[i].min, low);
        EXPECT_EQ(buckets[i].max, high);
    }
    EXPECT_EQ(buckets_by_position(model, series::reserved, 0, 5, 100).size(), 5u);
    EXPECT_EQ(model.values(series::reserved)[model.peak_position(series::reserved)],
              *std::max_element(curve.begin(), curve.end()));
}

TEST(timeline, time_buckets_hold_the_values_in_effect) {
    const device_model model = random_model(13, 1000);
    const auto& curve = model.values(series::allocated);
    const int64_t first = model.time_at(0);
    const int64_t last = model.time_at(model.event_count()) + 1;
    const auto buckets = buckets_by_time(model, series::allocated, first, last, 97);
    ASSERT_EQ(buckets.size(), 97u);
    for (const auto& bucket : buckets) {
        const auto [low, high] = brute_min_max(curve, bucket.first, bucket.last);
        EXPECT_EQ(bucket.min, low);
        EXPECT_EQ(bucket.max, high);
    }
    // The reference allocator stamps entry i at 1 ms + i us.
    EXPECT_EQ(model.position_at_time(1'000'000 + 5 * 1000), 6u);
    EXPECT_EQ(model.position_at_time(0), 0u);
}

TEST(timeline, largest_allocations_and_rest_add_up_to_the_curve) {
    const device_model model = random_model(14, 1500);
    for (const bool pending : {false, true}) {
        const series s = pending ? series::active : series::allocated;
        const size_t first = 200;
        const size_t last = model.event_count() + 1;
        const auto timeline = largest_allocations(model, first, last, 20, last - first, pending);
        ASSERT_EQ(timeline.largest.size(), 20u);
        for (size_t i = 1; i < timeline.largest.size(); ++i) {
            EXPECT_GE(model.lifetimes()[timeline.largest[i - 1]].size,
                      model.lifetimes()[timeline.largest[i]].size);
        }
        ASSERT_EQ(timeline.rest.size(), last - first);
        for (const auto& bucket : timeline.rest) {
            ASSERT_EQ(bucket.last, bucket.first + 1);
            const size_t p = bucket.first;
            uint64_t largest_live = 0;
            for (const size_t i : timeline.largest) {
                const auto& life = model.lifetimes()[i];
                if (life.begin <= p && p < (pending ? life.released : life.end)) {
                    largest_live += life.size;
                }
            }
            EXPECT_EQ(bucket.min + largest_live, model.values(s)[p]) << p;
        }
    }
}

}  // namespace
}  // namespace memtrail::analysis
