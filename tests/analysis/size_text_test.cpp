#include <gtest/gtest.h>

#include "memtrail/analysis/size_text.hpp"

namespace memtrail::analysis {
namespace {

TEST(size_text, formats_with_binary_units) {
    EXPECT_EQ(format_bytes(0), "0B");
    EXPECT_EQ(format_bytes(512), "512B");
    EXPECT_EQ(format_bytes(1536), "1.5KiB");
    EXPECT_EQ(format_bytes(20ull << 20), "20MiB");
    EXPECT_EQ(format_bytes((3ull << 30) / 2), "1.5GiB");
    EXPECT_EQ(format_bytes((5ull << 30) / 4), "1.25GiB");
    EXPECT_EQ(format_bytes(2ull << 40), "2TiB");
    EXPECT_EQ(format_bytes_delta(-(20ll << 20)), "-20MiB");
    EXPECT_EQ(format_bytes_delta(1536), "+1.5KiB");
    EXPECT_EQ(format_bytes_delta(0), "0B");
}

TEST(size_text, parses_plain_bytes_and_units) {
    EXPECT_EQ(parse_bytes("1048576"), 1048576u);
    EXPECT_EQ(parse_bytes("1.5GiB"), 3ull << 29);
    EXPECT_EQ(parse_bytes("1.5 gib"), 3ull << 29);
    EXPECT_EQ(parse_bytes("20MiB"), 20ull << 20);
    EXPECT_EQ(parse_bytes("4KiB"), 4096u);
    EXPECT_EQ(parse_bytes("1TiB"), 1ull << 40);
    EXPECT_EQ(parse_bytes("2KB"), 2000u);
    EXPECT_EQ(parse_bytes("1.5MB"), 1500000u);
    EXPECT_EQ(parse_bytes("3GB"), 3000000000u);
    EXPECT_EQ(parse_bytes("512B"), 512u);
    EXPECT_EQ(parse_bytes(format_bytes(20ull << 20)), 20ull << 20);
}

TEST(size_text, rejects_malformed_sizes) {
    EXPECT_FALSE(parse_bytes(""));
    EXPECT_FALSE(parse_bytes("GiB"));
    EXPECT_FALSE(parse_bytes("-1"));
    EXPECT_FALSE(parse_bytes("1.5XB"));
    EXPECT_FALSE(parse_bytes("1..5"));
    EXPECT_FALSE(parse_bytes("99999999999TiB"));
    EXPECT_FALSE(parse_bytes("18446744073709551616"));
}

}  // namespace
}  // namespace memtrail::analysis
