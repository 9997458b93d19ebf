// The state the model gives at any position equals the reference allocator's own state after
// that many entries, whether the trace starts from an empty allocator or from the middle of a
// run (entries before it dropped), and whatever the checkpoint spacing.

#include <gtest/gtest.h>

#include <memory>
#include <random>
#include <set>

#include "memtrail/analysis/device_model.hpp"
#include "reference_allocator.hpp"

namespace memtrail::analysis {
namespace {

using testing::reference_allocator;

struct scenario {
    std::shared_ptr<snapshot::snapshot> snap;
    std::vector<std::vector<snapshot::segment>> states;  // after i entries of the full run
};

scenario random_scenario(uint32_t seed, int operations) {
    scenario s;
    s.snap = std::make_shared<snapshot::snapshot>();
    reference_allocator allocator(*s.snap);
    testing::run_random_workload(allocator, testing::make_stacks(*s.snap, 6), seed, operations);
    allocator.finish();
    s.states = allocator.states();
    return s;
}

void expect_same_segments(const std::vector<snapshot::segment>& want,
                          const std::vector<snapshot::segment>& got, const std::string& where) {
    ASSERT_EQ(want.size(), got.size()) << where;
    for (size_t i = 0; i < want.size(); ++i) {
        EXPECT_EQ(want[i].address, got[i].address) << where;
        EXPECT_EQ(want[i].total_size, got[i].total_size) << where;
        EXPECT_EQ(want[i].stream, got[i].stream) << where;
        EXPECT_EQ(want[i].is_large, got[i].is_large) << where;
        ASSERT_EQ(want[i].blocks.size(), got[i].blocks.size()) << where << " segment " << i;
        for (size_t b = 0; b < want[i].blocks.size(); ++b) {
            const auto& w = want[i].blocks[b];
            const auto& g = got[i].blocks[b];
            EXPECT_EQ(w.address, g.address) << where;
            EXPECT_EQ(w.size, g.size) << where << " block " << b;
            EXPECT_EQ(w.state, g.state) << where << " block " << b;
            if (w.state != snapshot::block_state::inactive) {
                EXPECT_EQ(w.requested_size, g.requested_size) << where;
                EXPECT_EQ(w.stack, g.stack) << where;
            }
        }
    }
}

uint64_t sum(const std::vector<snapshot::segment>& segments, bool pending_too) {
    uint64_t total = 0;
    for (const auto& seg : segments) {
        for (const auto& blk : seg.blocks) {
            if (blk.state == snapshot::block_state::active_allocated ||
                (pending_too && blk.state == snapshot::block_state::active_pending_free)) {
                total += blk.size;
            }
        }
    }
    return total;
}

uint64_t reserved(const std::vector<snapshot::segment>& segments) {
    uint64_t total = 0;
    for (const auto& seg : segments) {
        total += seg.total_size;
    }
    return total;
}

std::vector<snapshot::block> active_blocks(const snapshot::segment& seg) {
    std::vector<snapshot::block> out;
    for (const auto& blk : seg.blocks) {
        if (blk.state != snapshot::block_state::inactive) {
            out.push_back(blk);
        }
    }
    return out;
}

class reconstruction : public ::testing::TestWithParam<uint32_t> {};

TEST_P(reconstruction, every_position_matches_the_reference_from_an_empty_start) {
    const scenario s = random_scenario(GetParam(), 600);
    const device_model model = device_model::build(s.snap, 0, model_options{64});
    ASSERT_EQ(model.event_count() + 1, s.states.size());
    EXPECT_EQ(model.report().anomalies, 0u);
    EXPECT_TRUE(model.report().matches_final_segments) << model.report().first_difference;
    for (size_t k = 0; k <= model.event_count(); ++k) {
        const memory_state state = model.state_after(k);
        expect_same_segments(s.states[k], state.segments, "position " + std::to_string(k));
        EXPECT_EQ(model.values(series::allocated)[k], sum(s.states[k], false));
        EXPECT_EQ(model.values(series::active)[k], sum(s.states[k], true));
        EXPECT_EQ(model.values(series::reserved)[k], reserved(s.states[k]));
        EXPECT_EQ(static_cast<uint64_t>(state.stats.allocated_bytes[0].current),
                  sum(s.states[k], false));
        if (::testing::Test::HasFailure()) {
            FAIL() << "first mismatch at position " << k;
        }
    }
}

// Blocks allocated before a cut trace keep their address, state and request, but their size
// is not recorded: a large block taken whole from a free range (the rest too small to split)
// looks the same as a rounded one once its neighbour is freed. The model then gives the rounded
// size, never more than the real one; everything allocated inside the trace is exact.
TEST_P(reconstruction, a_trace_cut_at_the_front_still_matches) {
    const scenario full = random_scenario(GetParam() + 1000, 600);
    std::mt19937 random(GetParam());
    for (int round = 0; round < 4; ++round) {
        auto cut = std::make_shared<snapshot::snapshot>(*full.snap);
        auto& entries = cut->trace_for(0).entries;
        const size_t dropped = std::uniform_int_distribution<size_t>(1, entries.size() - 1)(random);
        entries.erase(entries.begin(), entries.begin() + static_cast<ptrdiff_t>(dropped));
        cut->trace_for(0).dropped = dropped;
        const device_model model = device_model::build(cut, 0, model_options{32});
        EXPECT_EQ(model.report().anomalies, 0u);
        EXPECT_TRUE(model.report().matches_final_segments) << model.report().first_difference;
        // Addresses of blocks allocated before the cut, while they live.
        std::set<uint64_t> from_before;
        for (const auto& seg : full.states[dropped]) {
            for (const auto& blk : seg.blocks) {
                if (blk.state != snapshot::block_state::inactive) {
                    from_before.insert(blk.address);
                }
            }
        }
        for (size_t k = 0; k <= model.event_count(); ++k) {
            if (k > 0 && model.entry(k - 1).kind == snapshot::action::alloc) {
                from_before.erase(model.entry(k - 1).address);
            }
            const std::string where =
                "dropped " + std::to_string(dropped) + ", position " + std::to_string(k);
            const auto& want = full.states[dropped + k];
            const auto got = model.state_after(k).segments;
            ASSERT_EQ(want.size(), got.size()) << where;
            for (size_t i = 0; i < want.size(); ++i) {
                EXPECT_EQ(want[i].address, got[i].address) << where;
                EXPECT_EQ(want[i].total_size, got[i].total_size) << where;
                const auto want_blocks = active_blocks(want[i]);
                const auto got_blocks = active_blocks(got[i]);
                ASSERT_EQ(want_blocks.size(), got_blocks.size()) << where;
                for (size_t b = 0; b < want_blocks.size(); ++b) {
                    const auto& w = want_blocks[b];
                    const auto& g = got_blocks[b];
                    EXPECT_EQ(w.address, g.address) << where;
                    EXPECT_EQ(w.state, g.state) << where;
                    EXPECT_EQ(w.requested_size, g.requested_size) << where;
                    if (from_before.contains(w.address)) {
                        EXPECT_LE(g.size, w.size) << where;
                        EXPECT_GE(g.size, w.requested_size) << where;
                    } else {
                        EXPECT_EQ(w.size, g.size) << where;
                    }
                }
            }
            if (from_before.empty()) {
                EXPECT_EQ(model.values(series::active)[k], sum(want, true)) << where;
            } else {
                EXPECT_LE(model.values(series::active)[k], sum(want, true)) << where;
            }
            if (::testing::Test::HasFailure()) {
                FAIL() << "first mismatch at position " << k << " after dropping " << dropped;
            }
        }
    }
}

INSTANTIATE_TEST_SUITE_P(seeds, reconstruction, ::testing::Values(1u, 2u, 3u, 4u, 5u, 6u, 7u, 8u));

TEST(reconstruction, positions_clamp_and_lifetimes_cover_every_allocation) {
    const scenario s = random_scenario(42, 400);
    const device_model model = device_model::build(s.snap, 0);
    EXPECT_EQ(model.state_after(model.event_count() + 100).position, model.event_count());
    size_t allocs = 0;
    for (size_t i = 0; i < model.event_count(); ++i) {
        allocs += model.entry(i).kind == snapshot::action::alloc ? 1 : 0;
    }
    EXPECT_EQ(model.lifetimes().size(), allocs);
    // Summing lifetimes over any position gives the curve.
    for (size_t k = 0; k <= model.event_count(); k += 7) {
        uint64_t allocated = 0;
        uint64_t active = 0;
        for (const auto& life : model.lifetimes()) {
            allocated += (life.begin <= k && k < life.end) ? life.size : 0;
            active += (life.begin <= k && k < life.released) ? life.size : 0;
        }
        EXPECT_EQ(allocated, model.values(series::allocated)[k]) << k;
        EXPECT_EQ(active, model.values(series::active)[k]) << k;
    }
}

TEST(reconstruction, a_snapshot_without_trace_is_its_segments) {
    const scenario s = random_scenario(9, 300);
    auto no_trace = std::make_shared<snapshot::snapshot>(*s.snap);
    no_trace->traces.clear();
    const device_model model = device_model::build(no_trace, 0);
    EXPECT_EQ(model.event_count(), 0u);
    expect_same_segments(s.states.back(), model.state_after(0).segments, "end");
}

}  // namespace
}  // namespace memtrail::analysis
