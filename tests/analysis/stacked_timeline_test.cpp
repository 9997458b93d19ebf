// Stacked timelines count every allocation: each column's layers add up to the curve at the
// position it shows, which is the column's highest, and the segments over time add up to the
// reserved memory with the allocated bytes inside them.

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <memory>

#include "memtrail/analysis/stacked_timeline.hpp"
#include "memtrail/snapshot/load.hpp"
#include "reference_allocator.hpp"

namespace memtrail::analysis {
namespace {

namespace fs = std::filesystem;

device_model random_model(uint32_t seed, int operations) {
    auto snap = std::make_shared<snapshot::snapshot>();
    testing::reference_allocator allocator(*snap);
    testing::run_random_workload(allocator, testing::make_stacks(*snap, 9), seed, operations);
    allocator.finish();
    return device_model::build(snap, 0);
}

std::vector<column_span> even_columns(size_t first, size_t last, size_t count) {
    std::vector<column_span> out;
    for (size_t i = 0; i < count; ++i) {
        const size_t a = first + (last - first) * i / count;
        const size_t b = first + (last - first) * (i + 1) / count;
        if (b > a) {
            out.push_back({a, b});
        }
    }
    return out;
}

void expect_layers_add_up(const device_model& model, const stacked_timeline& t,
                          const std::vector<column_span>& columns, bool include_pending) {
    const auto& curve = model.values(include_pending ? series::active : series::allocated);
    ASSERT_EQ(t.positions.size(), columns.size());
    for (size_t c = 0; c < columns.size(); ++c) {
        const size_t p = t.positions[c];
        ASSERT_GE(p, columns[c].first);
        ASSERT_LT(p, columns[c].last);
        EXPECT_EQ(curve[p],
                  *std::max_element(curve.begin() + static_cast<ptrdiff_t>(columns[c].first),
                                    curve.begin() + static_cast<ptrdiff_t>(columns[c].last)));
        uint64_t sum = 0;
        for (size_t k = 0; k < t.layers(); ++k) {
            sum += t.at(c, k);
        }
        EXPECT_EQ(sum, curve[p]) << "column " << c << " at " << p;
    }
}

void expect_segments_add_up(const device_model& model, const segment_timeline& t,
                            bool include_pending) {
    const auto& reserved = model.values(series::reserved);
    const auto& used = model.values(include_pending ? series::active : series::allocated);
    for (size_t c = 0; c < t.columns.size(); ++c) {
        uint64_t size = 0;
        uint64_t allocated = 0;
        for (const auto& cell : t.columns[c]) {
            size += t.segments[cell.segment].size;
            allocated += cell.allocated;
            EXPECT_LE(cell.allocated, t.segments[cell.segment].size);
        }
        EXPECT_EQ(size, reserved[t.positions[c]]) << "column " << c;
        EXPECT_EQ(allocated, used[t.positions[c]]) << "column " << c;
    }
    // Stacking order: large pool first, then by stream.
    for (size_t s = 1; s < t.segments.size(); ++s) {
        EXPECT_LE(!t.segments[s - 1].is_large, !t.segments[s].is_large);
    }
}

TEST(stacked_timeline, category_and_stack_layers_add_up_to_the_curve) {
    const device_model model = random_model(5, 4000);
    const category_map map = category_map::build(model);
    for (const bool pending : {false, true}) {
        const auto columns = even_columns(0, model.event_count() + 1, 311);
        const auto by_category =
            stack_allocations(model, map, stack_key::category, columns, pending, 4);
        EXPECT_EQ(by_category.layers(), memory_category_count);
        expect_layers_add_up(model, by_category, columns, pending);
        const auto by_stack = stack_allocations(model, map, stack_key::stack, columns, pending, 4);
        EXPECT_TRUE(by_stack.has_rest);
        EXPECT_EQ(by_stack.keys.size(), 4u);
        expect_layers_add_up(model, by_stack, columns, pending);
        const auto zoomed = even_columns(1000, 1900, 2000);  // more columns than positions
        expect_layers_add_up(model,
                             stack_allocations(model, map, stack_key::stack, zoomed, pending, 64),
                             zoomed, pending);
    }
}

TEST(stacked_timeline, segments_add_up_to_reserved_and_allocated) {
    const device_model model = random_model(6, 4000);
    const category_map map = category_map::build(model);
    for (const bool pending : {false, true}) {
        expect_segments_add_up(
            model,
            segments_over_time(model, map, even_columns(0, model.event_count() + 1, 257), pending),
            pending);
    }
}

TEST(stacked_timeline, real_traces_add_up) {
    const fs::path folder = fs::path(MEMTRAIL_UNPACKED_TRACES);
    for (const char* name :
         {"transformer__default.pickle", "transformer__expandable_segments-True.pickle",
          "streams__default.pickle", "resnet__garbage_collection_threshold-0.5__frac0.07.pickle"}) {
        const fs::path path = folder / name;
        // Unpacked from tests/data at configure time: missing means the build is broken.
        ASSERT_TRUE(fs::exists(path)) << path << " is missing";
        SCOPED_TRACE(name);
        const device_model model = device_model::build(snapshot::load_snapshot(path).snapshot, 0);
        const category_map map = category_map::build(model);
        const auto columns = even_columns(0, model.event_count() + 1, 997);
        for (const bool pending : {false, true}) {
            expect_layers_add_up(
                model, stack_allocations(model, map, stack_key::category, columns, pending, 0),
                columns, pending);
            expect_layers_add_up(
                model, stack_allocations(model, map, stack_key::stack, columns, pending, 16),
                columns, pending);
            expect_segments_add_up(model, segments_over_time(model, map, columns, pending),
                                   pending);
        }
    }
}

}  // namespace
}  // namespace memtrail::analysis
