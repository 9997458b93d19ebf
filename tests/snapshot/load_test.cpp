// load_snapshot recognises each format by content, whatever the file is called.

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "detail/zstd_codec.hpp"
#include "memtrail/snapshot/format_error.hpp"
#include "memtrail/snapshot/load.hpp"
#include "memtrail/snapshot/msgpack_format.hpp"
#include "memtrail/snapshot/torch_pickle.hpp"
#include "sample_snapshot.hpp"
#include "test_paths.hpp"

namespace ms = memtrail::snapshot;

TEST(LoadSnapshot, DetectsEachFormatByContent) {
    const auto sample = ms::test::make_sample_snapshot();
    const auto plain = ms::write_snapshot(sample);
    const auto packed = ms::write_snapshot(sample, {ms::compression::zstd, 3});
    const auto pickle = ms::write_torch_pickle(sample);
    EXPECT_EQ(ms::detect_file_kind(plain), ms::file_kind::memtrail);
    EXPECT_EQ(ms::detect_file_kind(packed), ms::file_kind::memtrail);
    EXPECT_EQ(ms::detect_file_kind(pickle), ms::file_kind::torch_pickle);
    EXPECT_TRUE(ms::load_snapshot(std::span<const uint8_t>(plain)) == sample);
    EXPECT_TRUE(ms::load_snapshot(std::span<const uint8_t>(packed)) == sample);
    EXPECT_TRUE(ms::load_snapshot(std::span<const uint8_t>(pickle)) ==
                ms::read_torch_pickle(std::span<const uint8_t>(pickle)));
}

TEST(LoadSnapshot, FilesOfBothKinds) {
    const auto pickle = ms::load_snapshot(ms::test::anchor("streams__default.pickle"));
    EXPECT_EQ(pickle.kind, ms::file_kind::torch_pickle);
    EXPECT_EQ(pickle.snapshot->segments.size(), 38u);
    const auto golden = ms::load_snapshot(ms::test::test_data("golden_v1.memtrail"));
    EXPECT_EQ(golden.kind, ms::file_kind::memtrail);
    EXPECT_TRUE(*golden.snapshot == ms::test::make_sample_snapshot());
}

TEST(LoadSnapshot, UnknownContentIsAFormatError) {
    const std::vector<uint8_t> text = {'{', '"', 'a', '"', '}'};
    EXPECT_EQ(ms::detect_file_kind(text), ms::file_kind::unknown);
    EXPECT_THROW(ms::load_snapshot(std::span<const uint8_t>(text)), ms::format_error);
    EXPECT_THROW(ms::load_snapshot(std::span<const uint8_t>()), ms::format_error);
}

// `zstd run.pickle` was read as a memtrail snapshot and refused for its "missing MEMTRAIL magic"
// (issue 31): a zstd frame is read as what it holds, a PyTorch pickle included.
TEST(LoadSnapshot, AZstdCompressedPickleIsReadAsAPickle) {
    const auto pickle = ms::write_torch_pickle(ms::test::make_sample_snapshot());
    const auto packed = ms::detail::zstd_compress(pickle, 3);
    EXPECT_EQ(ms::detect_file_kind(packed), ms::file_kind::torch_pickle);
    EXPECT_TRUE(ms::load_snapshot(std::span<const uint8_t>(packed)) ==
                ms::read_torch_pickle(std::span<const uint8_t>(pickle)));

    const auto path = std::filesystem::path(::testing::TempDir()) / "zstd_pickle.pickle.zst";
    std::ofstream(path, std::ios::binary)
        .write(reinterpret_cast<const char*>(packed.data()), std::ssize(packed));
    const auto loaded = ms::load_snapshot(path);
    EXPECT_EQ(loaded.kind, ms::file_kind::torch_pickle);
    EXPECT_TRUE(*loaded.snapshot == ms::read_torch_pickle(std::span<const uint8_t>(pickle)));
    std::filesystem::remove(path);
}

TEST(LoadSnapshot, AZstdFrameOfSomethingElseSaysWhatItIsAndWhatIsRead) {
    const std::string text = "{\"not\": \"a snapshot\"}";
    const auto packed = ms::detail::zstd_compress(
        std::span(reinterpret_cast<const uint8_t*>(text.data()), text.size()), 3);
    EXPECT_EQ(ms::detect_file_kind(packed), ms::file_kind::unknown);
    const auto path = std::filesystem::path(::testing::TempDir()) / "other.zst";
    std::ofstream(path, std::ios::binary)
        .write(reinterpret_cast<const char*>(packed.data()), std::ssize(packed));
    try {
        ms::load_snapshot(path);
        ADD_FAILURE() << "loaded";
    } catch (const ms::load_error& e) {
        EXPECT_EQ(std::string(e.what()),
                  path.string() +
                      ": zstd-compressed, but holds neither a memtrail snapshot nor a PyTorch "
                      "snapshot pickle (protocol 2 or later); both are read plain or "
                      "zstd-compressed");
    }
    std::filesystem::remove(path);
}
