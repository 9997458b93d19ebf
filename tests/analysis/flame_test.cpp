// Flame graphs hold exactly the live bytes: at any position, at the peak, in folded form; the
// range graph holds each stack's own maximum; a differential graph's root moves by the change in
// live bytes.

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <random>
#include <sstream>

#include "memtrail/analysis/flame.hpp"
#include "memtrail/analysis/range_changes.hpp"
#include "reference_allocator.hpp"

namespace memtrail::analysis {
namespace {

device_model random_model(uint32_t seed, int operations) {
    auto snap = std::make_shared<snapshot::snapshot>();
    testing::reference_allocator allocator(*snap);
    testing::run_random_workload(allocator, testing::make_stacks(*snap, 8), seed, operations);
    allocator.finish();
    return device_model::build(snap, 0, model_options{50});
}

void expect_consistent(const flame_graph& graph) {
    for (const auto& node : graph.nodes) {
        uint64_t children = 0;
        for (const uint32_t c : node.children) {
            children += graph.nodes[c].bytes;
            EXPECT_EQ(graph.nodes[c].depth, node.depth + 1);
        }
        EXPECT_EQ(node.bytes, node.self_bytes + children) << node.name;
    }
}

uint64_t folded_sum(const std::string& folded) {
    std::istringstream lines(folded);
    std::string line;
    uint64_t total = 0;
    while (std::getline(lines, line)) {
        total += std::stoull(line.substr(line.rfind(' ') + 1));
    }
    return total;
}

TEST(flame, totals_equal_live_bytes_at_every_position) {
    const device_model model = random_model(3, 500);
    for (size_t k = 0; k <= model.event_count(); k += 3) {
        const flame_graph allocated = flame_at(model, k, live_measure::allocated);
        const flame_graph active = flame_at(model, k, live_measure::active);
        EXPECT_EQ(allocated.total(), model.values(series::allocated)[k]) << k;
        EXPECT_EQ(active.total(), model.values(series::active)[k]) << k;
        EXPECT_EQ(folded_sum(to_folded(active)), active.total()) << k;
        expect_consistent(active);
    }
}

TEST(flame, peak_graph_holds_the_peak) {
    const device_model model = random_model(4, 500);
    const auto& curve = model.values(series::allocated);
    EXPECT_EQ(flame_at_peak(model, live_measure::allocated).total(),
              *std::max_element(curve.begin(), curve.end()));
}

TEST(flame, range_graph_holds_each_stack_at_its_maximum) {
    const device_model model = random_model(5, 400);
    const size_t first = 100;
    const size_t last = 300;
    std::map<snapshot::stack_id, uint64_t> highest;
    for (size_t k = first; k <= last; ++k) {
        for (const auto& s : bytes_by_stack(model.state_after(k), live_measure::active)) {
            highest[s.stack] = std::max(highest[s.stack], s.bytes);
        }
    }
    uint64_t expected_total = 0;
    for (const auto& [stack, bytes] : highest) {
        expected_total += bytes;
    }
    const flame_graph graph = flame_over_range(model, first, last, live_measure::active);
    EXPECT_EQ(graph.total(), expected_total);
    expect_consistent(graph);
    EXPECT_GE(graph.total(), model.min_max(series::active, first, last + 1).second);
}

TEST(flame, allocated_in_range_holds_what_the_range_allocated_and_kept) {
    const device_model model = random_model(6, 500);
    for (const auto& [first, last] : {std::pair<size_t, size_t>{100, 300}, {0, 250}, {40, 41}}) {
        // Counted from the lifetimes: allocated inside, not yet freed at `last`.
        uint64_t expected = 0;
        for (const allocation_lifetime& life : model.lifetimes()) {
            if (life.begin > first && life.begin <= last && life.end > last) {
                expected += life.size;
            }
        }
        const flame_graph graph =
            flame_allocated_in_range(model, first, last, live_measure::allocated);
        EXPECT_EQ(graph.total(), expected) << first << ".." << last;
        expect_consistent(graph);
    }
    EXPECT_EQ(flame_allocated_in_range(model, 200, 200, live_measure::active).total(), 0u);
}

// Every freed span was held at the range's start and is free at its end; the new blocks and
// segments are exactly those absent at the start.
TEST(range_changes, freed_spans_and_new_blocks_match_the_states) {
    const device_model model = random_model(7, 500);
    const size_t first = 150;
    const size_t last = 350;
    const range_changes changes = changes_over(model, last, first);
    ASSERT_EQ(changes.first, first) << "the ends are put in order";
    const memory_state start = model.state_after(first);
    auto held_at = [](const memory_state& state, uint64_t address) {
        for (const snapshot::segment& seg : state.segments) {
            for (const snapshot::block& b : seg.blocks) {
                if (address >= b.address && address < b.address + b.size) {
                    return b.state != snapshot::block_state::inactive;
                }
            }
        }
        return false;
    };
    ASSERT_FALSE(changes.freed.empty());
    for (const auto& [begin, end] : changes.freed) {
        ASSERT_LT(begin, end);
        EXPECT_TRUE(held_at(start, begin));
        EXPECT_TRUE(held_at(start, end - 1));
        EXPECT_FALSE(held_at(changes.at_end, begin));
    }
    ASSERT_FALSE(changes.new_blocks.empty());
    for (const snapshot::segment& seg : changes.at_end.segments) {
        for (const snapshot::block& b : seg.blocks) {
            if (b.state == snapshot::block_state::inactive) {
                EXPECT_FALSE(changes.is_new_block(b.address));
            }
        }
    }
    EXPECT_TRUE(changes_over(model, 200, 200).new_blocks.empty());
    EXPECT_TRUE(changes_over(model, 200, 200).freed.empty());
}

TEST(flame, differential_graph_moves_by_the_change) {
    const device_model model = random_model(6, 400);
    const flame_graph before = flame_at(model, 120, live_measure::allocated);
    const flame_graph after = flame_at(model, 380, live_measure::allocated);
    const flame_diff diff = diff_flames(before, after);
    EXPECT_EQ(diff.nodes[0].before, before.total());
    EXPECT_EQ(diff.nodes[0].after, after.total());
    for (const auto& node : diff.nodes) {
        uint64_t children_before = 0;
        uint64_t children_after = 0;
        for (const uint32_t c : node.children) {
            children_before += diff.nodes[c].before;
            children_after += diff.nodes[c].after;
        }
        EXPECT_LE(children_before, node.before);
        EXPECT_LE(children_after, node.after);
    }
    const flame_diff same = diff_flames(after, after);
    for (const auto& node : same.nodes) {
        EXPECT_EQ(node.delta(), 0) << node.name;
    }
}

TEST(flame, blocks_without_stack_are_named) {
    auto snap = std::make_shared<snapshot::snapshot>();
    testing::reference_allocator allocator(*snap);
    allocator.allocate(4096, 0, snapshot::no_id);
    allocator.finish();
    const flame_graph graph = flame_at(device_model::build(snap, 0), 2, live_measure::allocated);
    ASSERT_EQ(graph.nodes.size(), 2u);
    EXPECT_EQ(graph.nodes[1].name, unknown_stack_label);
    EXPECT_EQ(to_folded(graph), std::string(unknown_stack_label) + " 4096\n");
}

}  // namespace
}  // namespace memtrail::analysis
