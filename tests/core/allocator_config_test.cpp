#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>

#include "doc_text.hpp"
#include "memtrail/core/allocator_config.hpp"

namespace memtrail {
namespace {

constexpr uint64_t MiB = 1ull << 20;

TEST(AllocatorConfig, DefaultsMatchPyTorch) {
    const allocator_config c = allocator_config::parse("");
    EXPECT_EQ(c.max_split_size, UINT64_MAX);
    EXPECT_EQ(c.max_non_split_rounding_size, 20 * MiB);
    EXPECT_EQ(c.garbage_collection_threshold, 0.0);
    EXPECT_FALSE(c.expandable_segments);
    for (uint64_t d : c.roundup_power2_divisions) {
        EXPECT_EQ(d, 0u);
    }
}

TEST(AllocatorConfig, ParsesEveryKey) {
    const allocator_config c = allocator_config::parse(
        "max_split_size_mb:64, max_non_split_rounding_mb:40,garbage_collection_threshold:0.5,"
        "expandable_segments:True,release_lock_on_cudamalloc:true,roundup_power2_divisions:4");
    EXPECT_EQ(c.max_split_size, 64 * MiB);
    EXPECT_EQ(c.max_non_split_rounding_size, 40 * MiB);
    EXPECT_DOUBLE_EQ(c.garbage_collection_threshold, 0.5);
    EXPECT_TRUE(c.expandable_segments);
    EXPECT_TRUE(c.release_lock_on_device_malloc);
    EXPECT_EQ(c.divisions_for(1), 4u);
    EXPECT_EQ(c.divisions_for(64ull << 30), 4u);
}

TEST(AllocatorConfig, RoundupListFillsIntervalsLikePyTorch) {
    const allocator_config c =
        allocator_config::parse("roundup_power2_divisions:[256:1,512:2,1024:4,>:8]");
    // Intervals are indexed by log2(size) - 20: 256 MiB is index 8.
    for (size_t i = 0; i < 8; ++i) {
        EXPECT_EQ(c.roundup_power2_divisions[i], 1u) << i;
    }
    EXPECT_EQ(c.roundup_power2_divisions[8], 1u);
    EXPECT_EQ(c.roundup_power2_divisions[9], 2u);
    EXPECT_EQ(c.roundup_power2_divisions[10], 4u);
    for (size_t i = 11; i < 16; ++i) {
        EXPECT_EQ(c.roundup_power2_divisions[i], 8u) << i;
    }
    EXPECT_EQ(c.divisions_for(300 * MiB), 1u);
    EXPECT_EQ(c.divisions_for(600 * MiB), 2u);
    EXPECT_EQ(c.divisions_for(1536 * MiB), 4u);
    EXPECT_EQ(c.divisions_for(3072 * MiB), 8u);
}

void expect_error(const char* text, const char* fragment) {
    try {
        allocator_config::parse(text);
        FAIL() << "accepted: " << text;
    } catch (const config_error& e) {
        EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos)
            << "message for '" << text << "': " << e.what();
    }
}

TEST(AllocatorConfig, BadInputNamesKeyAndWhatIsAccepted) {
    expect_error("max_split_size_mb:10", "at least 20");
    expect_error("max_split_size_mb:abc", "'max_split_size_mb' has value 'abc'");
    expect_error("max_split_size_mb:-5", "accepted");
    expect_error("garbage_collection_threshold:1.5", "between 0 and 1");
    expect_error("garbage_collection_threshold:0", "between 0 and 1");
    expect_error("expandable_segments:yes", "accepted: True or False");
    expect_error("roundup_power2_divisions:3", "power of two");
    expect_error("roundup_power2_divisions:[100:2]", "interval '100'");
    expect_error("roundup_power2_divisions:[256:3]", "0 or a power of two");
    expect_error("roundup_power2_divisions:[256:2", "ends");
    expect_error("no_such_key:1", "unknown key 'no_such_key'");
    expect_error("max_split_size_mb", "ends");
    expect_error("max_split_size_mb:64 expandable_segments:True", "expected ','");
    expect_error("backend:cudaMallocAsync", "accepted: native");
}

TEST(AllocatorConfig, EveryKeyOnceOnly) {
    expect_error("max_split_size_mb:64,max_split_size_mb:128",
                 "'max_split_size_mb' is given twice");
    expect_error("expandable_segments:True, roundup_power2_divisions:4, expandable_segments:False",
                 "'expandable_segments' is given twice");
    expect_error("pinned_num_register_threads:1,pinned_num_register_threads:2", "given twice");
}

TEST(AllocatorConfig, UnknownKeyErrorListsTheTable) {
    try {
        allocator_config::parse("no_such_key:1");
        FAIL() << "accepted an unknown key";
    } catch (const config_error& e) {
        for (const allocator_option& option : allocator_options()) {
            EXPECT_NE(std::string(e.what()).find(option.key), std::string::npos) << option.key;
        }
    }
}

// docs/configuration.md's table and the parser's are one: same keys, defaults and accepted values.
TEST(AllocatorConfig, DocsListEveryKeyOfTheTable) {
    std::map<std::string, std::vector<std::string>> documented;
    for (const auto& row :
         test::markdown_table(test::source_file("docs/configuration.md"), "key")) {
        ASSERT_EQ(row.size(), 4u) << row[0];
        EXPECT_TRUE(documented.emplace(row[0], row).second) << row[0] << " is documented twice";
    }
    std::set<std::string> keys;
    for (const allocator_option& option : allocator_options()) {
        const std::string key(option.key);
        keys.insert(key);
        const auto row = documented.find(key);
        if (row == documented.end()) {
            ADD_FAILURE() << key << " is missing from docs/configuration.md";
            continue;
        }
        EXPECT_EQ(row->second[1], option.default_value) << key;
        EXPECT_EQ(row->second[2], option.accepted) << key;
    }
    for (const auto& [key, row] : documented) {
        EXPECT_TRUE(keys.contains(key)) << key << " is documented but not in the table";
    }
}

TEST(AllocatorConfig, PyTorchHostKeysAreAcceptedAndIgnored) {
    const allocator_config c = allocator_config::parse(
        "pinned_use_cuda_host_register:True,pinned_num_register_threads:8,backend:native");
    EXPECT_EQ(c.max_split_size, UINT64_MAX);
}

}  // namespace
}  // namespace memtrail
