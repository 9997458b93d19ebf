// Why one rank peaks higher than another, on real PyTorch 2.11 traces recorded on two H200s
// (tests/data/traces/jobs.tar.gz): FSDP2 where rank 1 gets twice rank 0's batch (parameters,
// gradients and optimizer state equal on both, as the recording's own numbers say), and FSDP2
// whose two ranks do the same work. And the rules of the comparison on numbers made up here.

#include <gtest/gtest.h>

#include <filesystem>
#include <memory>

#include "memtrail/analysis/peak_comparison.hpp"
#include "memtrail/snapshot/load.hpp"

namespace memtrail::analysis {
namespace {

namespace fs = std::filesystem;

constexpr uint64_t mib = 1ull << 20;

// The model of the device the trace is on (rank 1's trace is on device 1).
device_model real_rank(const char* name) {
    const fs::path path = fs::path(MEMTRAIL_UNPACKED_TRACES) / name;
    // Unpacked from tests/data at configure time: missing means the build is broken.
    EXPECT_TRUE(fs::exists(path)) << path << " is missing";
    const auto source = snapshot::load_snapshot(path).snapshot;
    return device_model::build(source, devices_of(*source).front());
}

uint64_t bytes_of(const std::vector<category_comparison>& categories, memory_category c,
                  size_t side) {
    return categories[static_cast<size_t>(c)].bytes[side];
}

TEST(about_equal, within_one_percent_or_one_mib) {
    EXPECT_TRUE(about_equal(0, 0));
    EXPECT_TRUE(about_equal(0, mib));
    EXPECT_FALSE(about_equal(0, mib + 1));
    EXPECT_TRUE(about_equal(1000 * mib, 990 * mib));
    EXPECT_FALSE(about_equal(1000 * mib, 989 * mib));
}

TEST(category_changes_text, names_what_differs_largest_first_then_what_is_equal) {
    std::vector<category_comparison> categories;
    for (size_t c = 0; c < memory_category_count; ++c) {
        categories.push_back({static_cast<memory_category>(c), {0, 0}});
    }
    EXPECT_EQ(category_changes_text(categories, 0, 1), "nothing allocated");
    categories[static_cast<size_t>(memory_category::parameter)].bytes = {300 * mib, 300 * mib};
    EXPECT_EQ(category_changes_text(categories, 0, 1), "every category equal (parameter)");
    categories[static_cast<size_t>(memory_category::activation)].bytes = {100 * mib, 624 * mib};
    categories[static_cast<size_t>(memory_category::temporary)].bytes = {50 * mib, 0};
    categories[static_cast<size_t>(memory_category::optimizer_state)].bytes = {600 * mib,
                                                                               601 * mib};
    EXPECT_EQ(category_changes_text(categories, 0, 1),
              "activation +524MiB, temporary -50MiB; parameter and optimizer_state equal");
    EXPECT_EQ(category_changes_text(categories, 1, 0),
              "activation -524MiB, temporary +50MiB; parameter and optimizer_state equal");
}

TEST(median_rank, the_middle_by_reserved_peak_never_the_highest_itself_on_a_tie) {
    EXPECT_EQ(median_rank({300, 100}, 0), 1u) << "two ranks: the other one";
    EXPECT_EQ(median_rank({100, 100}, 0), 1u) << "a tie: the highest counts as the higher";
    EXPECT_EQ(median_rank({100, 100}, 1), 0u);
    EXPECT_EQ(median_rank({500, 100, 300}, 0), 2u) << "three: the middle one";
    EXPECT_EQ(median_rank({400, 100, 300, 200}, 0), 3u) << "four: the lower middle one";
    EXPECT_EQ(median_rank({100}, 0), 0u) << "one rank is its own median";
    EXPECT_EQ(median_rank_meaning(2), "the median rank: with 2 ranks, the other one");
    EXPECT_EQ(median_rank_meaning(3),
              "the median rank: the middle of the 3 ranks ordered by peak reserved");
    EXPECT_EQ(median_rank_meaning(4),
              "the median rank: the middle of the 4 ranks ordered by "
              "peak reserved, the lower of the two in the middle");
}

class real_ranks : public ::testing::Test {
  protected:
    static void SetUpTestSuite() {
        for (const char* name : {"fsdp2_imbalance__rank0.pickle", "fsdp2_imbalance__rank1.pickle",
                                 "fsdp2_gpu__rank0.pickle", "fsdp2_gpu__rank1.pickle"}) {
            models_.push_back(real_rank(name));
        }
    }
    static std::vector<const device_model*> pick(std::initializer_list<size_t> indexes) {
        std::vector<const device_model*> out;
        for (const size_t i : indexes) {
            out.push_back(&models_[i]);
        }
        return out;
    }
    static inline std::vector<device_model> models_;
};

TEST_F(real_ranks, contents_at_peak_count_every_allocated_byte_once) {
    for (const device_model& model : models_) {
        const peak_contents peak = contents_at_peak(model);
        const uint64_t allocated = model.values(series::allocated)[peak.position];
        EXPECT_EQ(peak.position, model.peak_position(series::allocated));
        EXPECT_EQ(peak.categories.total_bytes(), allocated);
        EXPECT_EQ(total_bytes(peak.stacks.stacks) + peak.unstacked_bytes(), allocated);
        EXPECT_EQ(peak.stack_categories.size(), peak.stacks.stacks.size());
    }
}

TEST_F(real_ranks, the_rank_with_twice_the_batch_is_explained_by_activations) {
    const rank_explanation e = explain_highest_rank(pick({0, 1}), 5);
    EXPECT_EQ(e.highest, 1u);
    EXPECT_EQ(e.median, 0u) << "with two ranks, the median is the other one";
    // Rank 1's batch is twice rank 0's: its activations are about twice rank 0's, more or less
    // by where in backward each rank's own peak falls (2.42 times here: 1.42 GiB against 601
    // MiB, FSDP's unsharded parameters counted apart as collective).
    const uint64_t base = bytes_of(e.categories, memory_category::activation, 0);
    const uint64_t doubled = bytes_of(e.categories, memory_category::activation, 1);
    EXPECT_GT(doubled - base, 512 * mib);
    EXPECT_GT(static_cast<double>(doubled) / static_cast<double>(base), 1.5);
    EXPECT_LT(static_cast<double>(doubled) / static_cast<double>(base), 3.0);
    for (const memory_category c : {memory_category::parameter, memory_category::gradient,
                                    memory_category::optimizer_state}) {
        EXPECT_TRUE(about_equal(bytes_of(e.categories, c, 0), bytes_of(e.categories, c, 1)))
            << category_name(c);
    }
    const std::string text = category_changes_text(e.categories, e.median, e.highest);
    EXPECT_EQ(text.rfind("activation +", 0), 0u) << text;
    EXPECT_NE(text.find("optimizer_state"), std::string::npos) << text;
    ASSERT_FALSE(e.stacks.empty());
    for (const stack_change& s : e.stacks) {
        EXPECT_GT(s.stack.bytes[1], s.stack.bytes[0]);
        EXPECT_EQ(s.category, memory_category::activation);
        EXPECT_FALSE(stack_text(*e.peaks[s.stack.first_holder].source, s.stack.stack).empty());
    }
}

TEST_F(real_ranks, identical_ranks_come_out_equal) {
    const rank_explanation e = explain_highest_rank(pick({2, 3}), 5);
    EXPECT_NE(e.highest, e.median) << "a rank is never compared with itself";
    for (const category_comparison& c : e.categories) {
        EXPECT_EQ(c.bytes[0], c.bytes[1]) << category_name(c.category);
    }
    EXPECT_EQ(category_changes_text(e.categories, e.median, e.highest)
                  .rfind("every category "
                         "equal",
                         0),
              0u);
    EXPECT_TRUE(e.stacks.empty());
}

TEST_F(real_ranks, the_median_of_three_is_the_middle_one) {
    // Reserved peaks: imbalance rank 0 and fsdp2_gpu rank 0 2.18 GiB, imbalance rank 1 3.14 GiB.
    const rank_explanation e = explain_highest_rank(pick({0, 1, 2}), 5);
    EXPECT_EQ(e.highest, 1u);
    EXPECT_EQ(e.median, 2u) << "ordered 0, 2, 1 (ties in order given)";
}

TEST(explain_highest_rank, one_rank_is_its_own_median) {
    auto source = std::make_shared<snapshot::snapshot>();
    const device_model model = device_model::build(source, 0);
    const rank_explanation e = explain_highest_rank({&model}, 5);
    EXPECT_EQ(e.highest, 0u);
    EXPECT_EQ(e.median, 0u);
    EXPECT_TRUE(e.stacks.empty());
}

}  // namespace
}  // namespace memtrail::analysis
