// Remedies for a real OOM proven by replay (PyTorch 2.11 on an H200,
// tests/data/traces/jobs.tar.gz): a live CUDA graph's pool held a cached 256 MiB segment when a 256
// MiB request failed under a 4 GiB cap. Releasing the graph's pool avoids the OOM; no allocator
// setting does.

#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "memtrail/replay/oom_remedies.hpp"
#include "memtrail/replay/trace_metadata.hpp"
#include "memtrail/snapshot/torch_pickle.hpp"

namespace memtrail::replay {
namespace {

constexpr size_t failed_entry = 61;

const oom_remedy& find(const oom_remedies& found, const std::string& starts_with) {
    const auto it =
        std::find_if(found.remedies.begin(), found.remedies.end(),
                     [&](const oom_remedy& r) { return r.description.rfind(starts_with, 0) == 0; });
    EXPECT_NE(it, found.remedies.end()) << starts_with;
    return *it;
}

TEST(oom_remedies, releasing_a_held_graph_pool_avoids_the_oom_under_its_cap) {
    const std::string base = std::string(MEMTRAIL_UNPACKED_TRACES) + "/oom_graph_pool";
    const snapshot::snapshot original = snapshot::read_torch_pickle(base + ".pickle");
    const trace_metadata meta = read_trace_metadata(base + ".json");
    oom_remedy_options options;
    options.device_memory = meta.device_total;
    options.memory_fraction = meta.fraction;
    options.try_releasing_private_pools = true;
    const oom_remedies found = try_oom_remedies(original, failed_entry, options);
    EXPECT_TRUE(found.baseline_reproduces);
    const oom_remedy& released = find(found, "the private pools released");
    EXPECT_TRUE(released.avoids);
    EXPECT_EQ(released.kind, remedy_kind::release_private_pools);
    EXPECT_FALSE(find(found, "expandable_segments:True").avoids);
    EXPECT_FALSE(find(found, "max_split_size_mb:128").avoids);
    EXPECT_TRUE(find(found, "no memory cap").avoids);

    // Without the fraction: the least cap the trace allows (the most it ever reserved) on the
    // least device the OOM allows, the same outcome.
    oom_remedy_options inferred;
    inferred.device_memory = 4095737856ull + 145222664192ull;  // reserved + free at the OOM
    inferred.cap_bytes = 4095737856ull;
    inferred.try_releasing_private_pools = true;
    const oom_remedies without = try_oom_remedies(original, failed_entry, inferred);
    EXPECT_TRUE(without.baseline_reproduces);
    EXPECT_TRUE(find(without, "the private pools released").avoids);
    EXPECT_FALSE(find(without, "expandable_segments:True").avoids);
}

}  // namespace
}  // namespace memtrail::replay
