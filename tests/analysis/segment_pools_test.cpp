// The pools of segments, from a snapshot's own segments, and the pool filter of the viewer.

#include <gtest/gtest.h>

#include "memtrail/analysis/segment_pools.hpp"

namespace memtrail::analysis {
namespace {

snapshot::segment segment_at(int8_t device, uint64_t address, uint64_t size, uint64_t first,
                             uint64_t second) {
    snapshot::segment seg;
    seg.device = device;
    seg.address = address;
    seg.total_size = size;
    seg.pool_id_first = first;
    seg.pool_id_second = second;
    return seg;
}

constexpr uint64_t MiB = 1 << 20;

snapshot::snapshot with_pools() {
    snapshot::snapshot s;
    s.segments = {segment_at(0, 10 * MiB, 2 * MiB, 0, 0), segment_at(0, 20 * MiB, 20 * MiB, 3, 0),
                  segment_at(0, 50 * MiB, 2 * MiB, 0, 1), segment_at(0, 60 * MiB, 2 * MiB, 3, 0),
                  segment_at(1, 80 * MiB, 2 * MiB, 0, 9)};
    return s;
}

TEST(segment_pools, a_segment_gets_the_pool_of_the_snapshots_segment_of_its_address_and_size) {
    const segment_pools pools(with_pools(), 0);
    EXPECT_EQ(pools.pool_of(20 * MiB, 20 * MiB), (segment_pool{3, 0}));
    EXPECT_EQ(pools.pool_of(10 * MiB, 2 * MiB), (segment_pool{0, 0}));
    EXPECT_EQ(pools.pool_of(20 * MiB, 2 * MiB), std::nullopt);  // another segment, given back
    EXPECT_EQ(pools.pool_of(30 * MiB, 2 * MiB), std::nullopt);
    EXPECT_EQ(pools.pool_of(80 * MiB, 2 * MiB), std::nullopt);  // device 1's
}

TEST(segment_pools, an_address_inside_a_segment_has_its_pool) {
    const segment_pools pools(with_pools(), 0);
    EXPECT_EQ(pools.pool_holding(20 * MiB + 19 * MiB), (segment_pool{3, 0}));
    EXPECT_EQ(pools.pool_holding(50 * MiB), (segment_pool{0, 1}));
    EXPECT_EQ(pools.pool_holding(40 * MiB), std::nullopt);  // just past the pool's segment
    EXPECT_EQ(pools.pool_holding(MiB), std::nullopt);
}

TEST(segment_pools, private_pools_are_listed_once_in_order) {
    const segment_pools pools(with_pools(), 0);
    EXPECT_EQ(pools.private_pools(), (std::vector<segment_pool>{{0, 1}, {3, 0}}));
    EXPECT_EQ(segment_pools(with_pools(), 1).private_pools(), (std::vector<segment_pool>{{0, 9}}));
    EXPECT_EQ(pool_name({0, 0}), "default");
    EXPECT_EQ(pool_name({3, 0}), "(3, 0)");
}

TEST(segment_pools, owners_follow_pytorchs_ids) {
    EXPECT_EQ(pool_owner({0, 0}), "default");
    EXPECT_EQ(pool_owner({3, 0}), "a CUDA graph's own pool (capture 3)");
    EXPECT_NE(pool_owner({0, 2}).find("MemPool"), std::string::npos);
}

TEST(segment_pools, a_pool_filled_through_cudagraph_trees_is_torch_compiles) {
    snapshot::snapshot snap;
    snapshot::frame f;
    f.function = snap.intern_string("run");
    f.filename = snap.intern_string("/venv/torch/_inductor/cudagraph_trees.py");
    const snapshot::stack_id compiled = snap.intern_stack({snap.intern_frame(f)});
    for (const uint64_t second : {1, 2}) {
        snapshot::segment& seg = snap.segments.emplace_back();
        seg.address = second << 20;
        seg.total_size = 1 << 20;
        seg.pool_id_second = second;
        snapshot::trace_entry& e = snap.trace_for(0).entries.emplace_back();
        e.kind = snapshot::action::alloc;
        e.address = seg.address;
        e.size = 512;
        e.stack = second == 1 ? compiled : snapshot::no_id;
    }
    const segment_pools pools(snap, 0);
    EXPECT_EQ(pools.owner({0, 1}), "torch.compile's CUDA graph trees (mode=\"reduce-overhead\")");
    EXPECT_EQ(pools.owner({0, 2}), pool_owner({0, 2}));
}

TEST(segment_pools, a_stream_whose_segments_are_all_in_one_private_pool_names_it) {
    snapshot::snapshot snap;
    auto add = [&](uint64_t address, uint64_t stream, segment_pool pool) {
        snapshot::segment& seg = snap.segments.emplace_back();
        seg.address = address;
        seg.total_size = 1 << 20;
        seg.stream = stream;
        seg.pool_id_first = pool.first;
        seg.pool_id_second = pool.second;
    };
    add(1 << 20, 5, {1, 0});
    add(2 << 20, 5, {1, 0});
    add(3 << 20, 6, {2, 0});
    add(4 << 20, 6, {0, 0});
    add(5 << 20, 0, {0, 0});
    const segment_pools pools(snap, 0);
    EXPECT_EQ(pools.pool_of_stream(5), (segment_pool{1, 0}));
    EXPECT_EQ(pools.pool_of_stream(6), std::nullopt);  // mixed with the default pools
    EXPECT_EQ(pools.pool_of_stream(0), (segment_pool{0, 0}));
    EXPECT_EQ(pools.pool_of_stream(7), std::nullopt);  // never seen
    snapshot::segment gone;  // given back before the snapshot, on the capture stream
    gone.address = 9 << 20;
    gone.total_size = 1 << 20;
    gone.stream = 5;
    const auto resolved = pools.resolve(gone);
    ASSERT_TRUE(resolved);
    EXPECT_EQ(resolved->pool, (segment_pool{1, 0}));
    EXPECT_TRUE(resolved->inferred);
    EXPECT_FALSE(pools.resolve(snap.segments[0])->inferred);
}

TEST(pool_filter, unknown_pools_pass_only_when_every_pool_is_shown) {
    using kind = pool_filter::kind;
    const pool_filter all{kind::all, {}};
    const pool_filter defaults{kind::default_pools, {}};
    const pool_filter graph{kind::one_private, {3, 0}};
    EXPECT_TRUE(all.accepts(std::nullopt));
    EXPECT_FALSE(defaults.accepts(std::nullopt));
    EXPECT_FALSE(graph.accepts(std::nullopt));
    EXPECT_TRUE(defaults.accepts(segment_pool{0, 0}));
    EXPECT_FALSE(defaults.accepts(segment_pool{3, 0}));
    EXPECT_TRUE(graph.accepts(segment_pool{3, 0}));
    EXPECT_FALSE(graph.accepts(segment_pool{0, 1}));
}

}  // namespace
}  // namespace memtrail::analysis
