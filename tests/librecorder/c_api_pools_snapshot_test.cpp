// The snapshots test_recorder_c_api_pools dumps (run first, in the same folder): each pool it
// allocated to is on the segments, in memtrail's format and in PyTorch's pickle
// (segment_pool_id).

#include <gtest/gtest.h>

#include <set>
#include <utility>

#include "memtrail/snapshot/msgpack_format.hpp"
#include "memtrail/snapshot/torch_pickle.hpp"

namespace {

namespace ms = memtrail::snapshot;
using pool = std::pair<uint64_t, uint64_t>;

std::set<pool> pools_of(const ms::snapshot& s) {
    std::set<pool> pools;
    for (const ms::segment& seg : s.segments) {
        pools.emplace(seg.pool_id_first, seg.pool_id_second);
    }
    return pools;
}

const std::set<pool> expected = {{0, 0}, {0, 1}, {2, 0}, {3, 0}};

TEST(c_api_pools_snapshot, memtrail_format_keeps_the_pools) {
    EXPECT_EQ(pools_of(ms::read_snapshot("c-api-pools.memtrail")), expected);
}

TEST(c_api_pools_snapshot, pickle_keeps_the_pools) {
    EXPECT_EQ(pools_of(ms::read_torch_pickle("c-api-pools.pickle")), expected);
}

}  // namespace
