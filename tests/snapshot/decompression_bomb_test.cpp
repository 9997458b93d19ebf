// Decompression bombs (issue 13): a 1,900-byte zstd file claimed 60M trace entries and took 5.8 GB.
// A zstd file is bounded by what its compressed size can honestly describe, and every real
// snapshot still loads under those bounds.

#include <gtest/gtest.h>
#include <sys/resource.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

#include "memtrail/snapshot/format_error.hpp"
#include "memtrail/snapshot/load.hpp"
#include "memtrail/snapshot/msgpack_format.hpp"
#include "test_paths.hpp"
#include "zstd_bomb.hpp"

namespace ms = memtrail::snapshot;
namespace fs = std::filesystem;

namespace {

long peak_rss_kib() {
    rusage usage{};
    ::getrusage(RUSAGE_SELF, &usage);
    return usage.ru_maxrss;
}

}  // namespace

TEST(DecompressionBomb, IsRefusedQuicklyInBoundedMemory) {
    const std::vector<uint8_t> bomb = ms::test::zstd_bomb(60'000'000);
    ASSERT_LT(bomb.size(), 2000u);
    const long rss_before = peak_rss_kib();
    const auto start = std::chrono::steady_clock::now();
    std::string error;
    try {
        ms::read_snapshot(std::span<const uint8_t>(bomb));
    } catch (const ms::format_error& e) {
        error = e.what();
    }
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    EXPECT_NE(error.find("refused as a decompression bomb"), std::string::npos) << error;
    // 64 times the file plus 1 MiB may be decompressed before the refusal.
    EXPECT_LT(peak_rss_kib() - rss_before, 16 * 1024) << "KiB";
    EXPECT_LT(seconds, 5.0);
}

TEST(DecompressionBomb, EntriesBeyondEightPerCompressedByteAreRefused) {
    // 128 KiB of raw padding allow 8.4 MiB of decompressed data but only about 2M entries.
    const std::vector<uint8_t> bomb = ms::test::zstd_bomb(3'000'000, 128 << 10);
    std::string error;
    try {
        ms::read_snapshot(std::span<const uint8_t>(bomb));
    } catch (const ms::format_error& e) {
        error = e.what();
    }
    EXPECT_NE(error.find("trace column 'kind'"), std::string::npos) << error;
    EXPECT_NE(error.find("8 per compressed byte plus 1048576"), std::string::npos) << error;
}

TEST(DecompressionBomb, SmallBombsWithinTheSlackStillRead) {
    const auto s = ms::read_snapshot(std::span<const uint8_t>(ms::test::zstd_bomb(500'000)));
    ASSERT_EQ(s.traces.size(), 1u);
    EXPECT_EQ(s.traces[0].entries.size(), 500'000u);
}

TEST(DecompressionBomb, EveryRealSnapshotLoadsUnderTheLimits) {
    std::vector<fs::path> files;
    for (const fs::path& folder : {ms::test::test_data(""), ms::test::anchor("")}) {
        for (const auto& item : fs::directory_iterator(folder)) {
            if (item.path().extension() != ".json") {
                files.push_back(item.path());
            }
        }
    }
    ASSERT_GE(files.size(), 5u);
    for (const fs::path& file : files) {
        const ms::loaded_snapshot loaded = ms::load_snapshot(file);
        // The most compressed a writer makes it must read back too.
        const auto packed = ms::write_snapshot(*loaded.snapshot, {ms::compression::zstd, 19});
        EXPECT_TRUE(ms::read_snapshot(std::span<const uint8_t>(packed)) == *loaded.snapshot)
            << file;
    }
}
