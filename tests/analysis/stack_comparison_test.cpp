// Stacks across snapshots (memtrail top and diff): matched by their frames' text whatever their
// ids, summed where one snapshot has the same text twice, ordered by the most held or by the
// change from the first snapshot.

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "memtrail/analysis/stack_comparison.hpp"

namespace memtrail::analysis {
namespace {

// A stack of Python frames named by their functions, outermost first; `module` tells frames with
// the same label apart, so one snapshot can hold two stacks of the same text.
snapshot::stack_id add_stack(snapshot::snapshot& source,
                             const std::vector<std::string>& outermost_first,
                             const std::string& module = "") {
    std::vector<snapshot::frame_id> innermost_first;
    for (auto it = outermost_first.rbegin(); it != outermost_first.rend(); ++it) {
        snapshot::frame f;
        f.kind = snapshot::frame_kind::python;
        f.function = source.intern_string(*it);
        f.filename = source.intern_string("model.py");
        f.line = 7;
        f.module = source.intern_string(module);
        innermost_first.push_back(source.intern_frame(f));
    }
    return source.intern_stack(innermost_first);
}

stack_bytes held(snapshot::stack_id stack, uint64_t bytes) {
    return stack_bytes{stack, bytes, 1, bytes};
}

TEST(stack_comparison, stack_text_is_the_frame_labels_outermost_first) {
    snapshot::snapshot source;
    const auto stack = add_stack(source, {"main", "train"});
    EXPECT_EQ(stack_text(source, stack), "main (model.py:7)\ntrain (model.py:7)\n");
    EXPECT_EQ(stack_text(source, snapshot::no_id), "");
}

TEST(stack_comparison, total_bytes_adds_every_stack) {
    EXPECT_EQ(total_bytes({held(1, 512), held(2, 1024), held(3, 0)}), 1536u);
    EXPECT_EQ(total_bytes({}), 0u);
}

TEST(stack_comparison, stacks_match_by_text_not_by_id) {
    snapshot::snapshot first;
    const auto first_train = add_stack(first, {"main", "train"});
    const auto first_load = add_stack(first, {"main", "load"});
    snapshot::snapshot second;  // the same stacks in the other order, and one more
    const auto second_eval = add_stack(second, {"main", "eval"});
    const auto second_load = add_stack(second, {"main", "load"});
    const auto second_train = add_stack(second, {"main", "train"});
    ASSERT_NE(first_train, second_train);

    const auto matched = match_stacks(
        {{&first, {held(first_train, 4096), held(first_load, 512)}},
         {&second, {held(second_train, 8192), held(second_eval, 1024), held(second_load, 512)}}});
    // In the order of their text: eval, load, train.
    ASSERT_EQ(matched.size(), 3u);
    EXPECT_EQ(matched[0].bytes, (std::vector<uint64_t>{0, 1024}));
    EXPECT_EQ(matched[0].first_holder, 1u);
    EXPECT_EQ(matched[0].stack, second_eval);
    EXPECT_EQ(matched[1].bytes, (std::vector<uint64_t>{512, 512}));
    EXPECT_EQ(matched[1].first_holder, 0u);
    EXPECT_EQ(matched[1].stack, first_load);
    EXPECT_EQ(matched[2].bytes, (std::vector<uint64_t>{4096, 8192}));
    EXPECT_EQ(matched[2].first_holder, 0u);
    EXPECT_EQ(matched[2].stack, first_train);
}

TEST(stack_comparison, one_snapshots_stacks_of_the_same_text_count_as_one) {
    snapshot::snapshot source;
    const auto from_a = add_stack(source, {"main", "train"}, "a.so");
    const auto from_b = add_stack(source, {"main", "train"}, "b.so");
    ASSERT_NE(from_a, from_b);
    const auto matched = match_stacks({{&source, {held(from_b, 2048), held(from_a, 1024)}}});
    ASSERT_EQ(matched.size(), 1u);
    EXPECT_EQ(matched[0].bytes, (std::vector<uint64_t>{3072}));
    EXPECT_EQ(matched[0].stack, from_b);  // the first in the snapshot's order
}

TEST(stack_comparison, blocks_without_a_stack_match_across_snapshots) {
    snapshot::snapshot first;
    snapshot::snapshot second;
    const auto matched = match_stacks(
        {{&first, {held(snapshot::no_id, 512)}}, {&second, {held(snapshot::no_id, 1536)}}});
    ASSERT_EQ(matched.size(), 1u);
    EXPECT_EQ(matched[0].bytes, (std::vector<uint64_t>{512, 1536}));
}

TEST(stack_comparison, largest_stacks_come_by_the_most_one_snapshot_holds) {
    snapshot::snapshot first;
    snapshot::snapshot second;
    const std::vector<std::string> names = {"a", "b", "c", "d"};
    std::vector<stack_bytes> first_stacks;
    std::vector<stack_bytes> second_stacks;
    const uint64_t first_bytes[] = {100, 900, 300, 50};
    const uint64_t second_bytes[] = {700, 0, 400, 60};
    for (size_t i = 0; i < names.size(); ++i) {
        first_stacks.push_back(held(add_stack(first, {"main", names[i]}), first_bytes[i]));
        second_stacks.push_back(held(add_stack(second, {"main", names[i]}), second_bytes[i]));
    }
    const auto largest = largest_stacks({{&first, first_stacks}, {&second, second_stacks}}, 3);
    ASSERT_EQ(largest.size(), 3u);
    EXPECT_EQ(largest[0].bytes, (std::vector<uint64_t>{900, 0}));    // b
    EXPECT_EQ(largest[1].bytes, (std::vector<uint64_t>{100, 700}));  // a
    EXPECT_EQ(largest[2].bytes, (std::vector<uint64_t>{300, 400}));  // c
    EXPECT_EQ(largest[0].most_bytes(), 900u);
    EXPECT_EQ(largest_stacks({{&first, first_stacks}, {&second, second_stacks}}, 10).size(), 4u);
}

TEST(stack_comparison, changes_are_from_the_first_snapshot_largest_in_magnitude_first) {
    snapshot::snapshot base;
    snapshot::snapshot later;
    snapshot::snapshot last;
    std::vector<stack_bytes> base_stacks;
    std::vector<stack_bytes> later_stacks;
    std::vector<stack_bytes> last_stacks;
    // Per stack: base, later, last.
    const std::vector<std::vector<uint64_t>> bytes = {
        {1000, 1000, 1000},  // unchanged: left out
        {1000, 200, 1000},   // -800
        {0, 300, 500},       // +500
        {600, 2000, 0},      // +1400 beats -600
        {400, 500, 300},     // -100 and +100: the earliest, +100
    };
    for (size_t i = 0; i < bytes.size(); ++i) {
        const std::vector<std::string> frames = {"main", "layer_" + std::to_string(i)};
        base_stacks.push_back(held(add_stack(base, frames), bytes[i][0]));
        later_stacks.push_back(held(add_stack(later, frames), bytes[i][1]));
        last_stacks.push_back(held(add_stack(last, frames), bytes[i][2]));
    }
    const std::vector<stacks_in_snapshot> snapshots = {
        {&base, base_stacks}, {&later, later_stacks}, {&last, last_stacks}};

    const auto changed = stacks_changed_most(snapshots, 10);
    ASSERT_EQ(changed.size(), 4u);
    EXPECT_EQ(changed[0].largest_change(), 1400);
    EXPECT_EQ(changed[0].change_from_first(2), -600);
    EXPECT_EQ(changed[1].largest_change(), -800);
    EXPECT_EQ(changed[2].largest_change(), 500);
    EXPECT_EQ(changed[2].change_from_first(1), 300);
    EXPECT_EQ(changed[3].largest_change(), 100);
    EXPECT_EQ(changed[3].bytes, (std::vector<uint64_t>{400, 500, 300}));

    const auto two = stacks_changed_most(snapshots, 2);
    ASSERT_EQ(two.size(), 2u);
    EXPECT_EQ(two[1].largest_change(), -800);
}

TEST(stack_comparison, one_snapshot_has_no_changes) {
    snapshot::snapshot source;
    const auto stack = add_stack(source, {"main"});
    EXPECT_TRUE(stacks_changed_most({{&source, {held(stack, 512)}}}, 10).empty());
}

}  // namespace
}  // namespace memtrail::analysis
