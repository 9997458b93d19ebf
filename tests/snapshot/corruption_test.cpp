// Damaged inputs for every reader: each prefix of a valid file, random byte flips, hand-made
// hostile headers. A reader must answer with a snapshot or a format_error, never crash, hang or
// throw anything else (run these under MEMTRAIL_SANITIZE=address too).

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <random>
#include <string_view>

#include "memtrail/snapshot/format_error.hpp"
#include "memtrail/snapshot/msgpack_format.hpp"
#include "memtrail/snapshot/torch_pickle.hpp"
#include "sample_snapshot.hpp"

namespace ms = memtrail::snapshot;
using ms::test::make_sample_snapshot;

namespace {

using reader = ms::snapshot (*)(std::span<const uint8_t>);

ms::snapshot read_msgpack(std::span<const uint8_t> bytes) {
    return ms::read_snapshot(bytes);
}
ms::snapshot read_pickle(std::span<const uint8_t> bytes) {
    return ms::read_torch_pickle(bytes);
}

// Returns the error message, "" when the input was accepted.
std::string outcome(reader read, std::span<const uint8_t> bytes) {
    try {
        read(bytes);
        return "";
    } catch (const ms::format_error& e) {
        return e.what();
    }
}

void expect_every_prefix_rejected(reader read, const std::vector<uint8_t>& bytes) {
    ASSERT_EQ(outcome(read, bytes), "");
    for (size_t n = 0; n < bytes.size(); ++n) {
        const std::span<const uint8_t> prefix(bytes.data(), n);
        EXPECT_NE(outcome(read, prefix), "") << "prefix of " << n << " bytes was accepted";
    }
}

// Flips 1 to 4 random bytes, many times; counts how many results were still accepted.
size_t flip_bytes(reader read, const std::vector<uint8_t>& bytes, int rounds) {
    std::mt19937_64 rng(1234);
    size_t accepted = 0;
    for (int round = 0; round < rounds; ++round) {
        auto damaged = bytes;
        const int flips = 1 + static_cast<int>(rng() % 4);
        for (int f = 0; f < flips; ++f) {
            damaged[rng() % damaged.size()] ^= static_cast<uint8_t>(1 + rng() % 255);
        }
        if (outcome(read, damaged).empty()) {
            ++accepted;
        }
    }
    return accepted;
}

std::vector<uint8_t> with_magic(std::initializer_list<uint8_t> body) {
    const std::string_view magic = "MEMTRAIL";
    std::vector<uint8_t> out(magic.size() + body.size());
    std::copy(magic.begin(), magic.end(), out.begin());
    std::copy(body.begin(), body.end(), out.begin() + static_cast<std::ptrdiff_t>(magic.size()));
    return out;
}

}  // namespace

// load_error lives beside format_error (this file sees no load.hpp): what is not a regular file
// is refused with its path first.
TEST(Corruption, AFolderIsALoadErrorNamingIt) {
    const std::filesystem::path folder = std::filesystem::temp_directory_path();
    try {
        (void)ms::read_snapshot(folder);
        FAIL() << "read a snapshot from a folder";
    } catch (const ms::load_error& e) {
        EXPECT_EQ(std::string_view(e.what()).substr(0, folder.string().size()), folder.string());
    }
}

TEST(Corruption, EveryPrefixOfAMsgpackFileIsRejected) {
    expect_every_prefix_rejected(read_msgpack, ms::write_snapshot(make_sample_snapshot()));
}

TEST(Corruption, EveryPrefixOfAZstdFileIsRejected) {
    expect_every_prefix_rejected(
        read_msgpack, ms::write_snapshot(make_sample_snapshot(), {ms::compression::zstd, 3}));
}

TEST(Corruption, EveryPrefixOfAPickleIsRejected) {
    expect_every_prefix_rejected(read_pickle, ms::write_torch_pickle(make_sample_snapshot()));
}

TEST(Corruption, ByteFlipsGiveFormatErrorsOrSnapshots) {
    const auto sample = make_sample_snapshot();
    // Most flips must be caught; some (a digit of a size) legitimately read as other values.
    const auto plain = ms::write_snapshot(sample);
    EXPECT_LT(flip_bytes(read_msgpack, plain, 5000), 5000u * 3 / 4);
    const auto packed = ms::write_snapshot(sample, {ms::compression::zstd, 3});
    flip_bytes(read_msgpack, packed, 2000);
    const auto pickle = ms::write_torch_pickle(sample);
    EXPECT_LT(flip_bytes(read_pickle, pickle, 5000), 5000u * 3 / 4);
}

TEST(Corruption, MsgpackHeaderChecks) {
    EXPECT_NE(outcome(read_msgpack, std::vector<uint8_t>{'M', 'E', 'M'}).find("magic"),
              std::string::npos);
    EXPECT_NE(outcome(read_msgpack, with_magic({0x02, 0x80})).find("version 2 is not supported"),
              std::string::npos);
    EXPECT_NE(outcome(read_msgpack, with_magic({0x00, 0x80})).find("version 0"), std::string::npos);
    EXPECT_EQ(outcome(read_msgpack, with_magic({0x01, 0x80})), "");
    EXPECT_NE(outcome(read_msgpack, with_magic({0x01, 0x80, 0x00})).find("1 unexpected bytes"),
              std::string::npos);
    // An unknown section is skipped; a repeated one is refused.
    EXPECT_EQ(outcome(read_msgpack, with_magic({0x01, 0x81, 0xa3, 'z', 'z', 'z', 0x91, 0x90})), "");
    EXPECT_NE(outcome(read_msgpack, with_magic({0x01, 0x82, 0xa5, 's', 't', 'a', 't', 's', 0x80,
                                                0xa5, 's', 't', 'a', 't', 's', 0x80}))
                  .find("appears twice"),
              std::string::npos);
}

TEST(Corruption, MsgpackHostileLengths) {
    // An array claiming 2^32-1 strings with nothing behind it: refused before reserving.
    const auto huge = with_magic(
        {0x01, 0x81, 0xa7, 's', 't', 'r', 'i', 'n', 'g', 's', 0xdd, 0xff, 0xff, 0xff, 0xff});
    EXPECT_NE(outcome(read_msgpack, huge).find("array of 4294967295 elements cannot fit"),
              std::string::npos)
        << outcome(read_msgpack, huge);
    // A string claiming 4 GiB.
    const auto long_string = with_magic({0x01, 0x81, 0xdb, 0xff, 0xff, 0xff, 0xff, 'x'});
    EXPECT_NE(outcome(read_msgpack, long_string).find("truncated string"), std::string::npos);
    // A map claiming 2^31 entries.
    const auto big_map = with_magic({0x01, 0xdf, 0x80, 0x00, 0x00, 0x00});
    EXPECT_NE(outcome(read_msgpack, big_map).find("cannot fit"), std::string::npos);
    // Deep nesting inside an unknown section stops at the skip depth.
    std::vector<uint8_t> deep = with_magic({0x01, 0x81, 0xa1, 'q'});
    deep.insert(deep.end(), 100000, 0x91);
    deep.push_back(0x90);
    EXPECT_NE(outcome(read_msgpack, deep).find("nesting deeper"), std::string::npos);
}

TEST(Corruption, MsgpackIdsAndEnumsAreChecked) {
    // strings ["a", "a"]: a duplicate would shift every later id.
    EXPECT_NE(outcome(read_msgpack, with_magic({0x01, 0x81, 0xa7, 's', 't', 'r', 'i', 'n', 'g', 's',
                                                0x92, 0xa1, 'a', 0xa1, 'a'}))
                  .find("repeats an earlier one"),
              std::string::npos);
    // stacks [[5]] with no frames.
    EXPECT_NE(outcome(read_msgpack, with_magic({0x01, 0x81, 0xa6, 's', 't', 'a', 'c', 'k', 's',
                                                0x91, 0x91, 0x05}))
                  .find("frame id 5 is out of range"),
              std::string::npos);
    // traces [{"columns": {"size": 1}}]: kind must come first.
    EXPECT_NE(outcome(read_msgpack, with_magic({0x01, 0x81, 0xa6, 't', 'r', 'a', 'c', 'e', 's',
                                                0x91, 0x81, 0xa7, 'c', 'o', 'l', 'u', 'm', 'n',
                                                's',  0x81, 0xa4, 's', 'i', 'z', 'e', 0x01}))
                  .find("first column must be 'kind'"),
              std::string::npos);
    // traces [{"columns": {"kind": [12]}}]: no such action.
    EXPECT_NE(outcome(read_msgpack, with_magic({0x01, 0x81, 0xa6, 't', 'r', 'a', 'c', 'e',  's',
                                                0x91, 0x81, 0xa7, 'c', 'o', 'l', 'u', 'm',  'n',
                                                's',  0x81, 0xa4, 'k', 'i', 'n', 'd', 0x91, 0x0c}))
                  .find("action 12 is unknown"),
              std::string::npos);
    // A column with the wrong number of values.
    EXPECT_NE(outcome(read_msgpack, with_magic({0x01, 0x81, 0xa6, 't', 'r', 'a',  'c',  'e',  's',
                                                0x91, 0x81, 0xa7, 'c', 'o', 'l',  'u',  'm',  'n',
                                                's',  0x82, 0xa4, 'k', 'i', 'n',  'd',  0x91, 0x00,
                                                0xa4, 's',  'i',  'z', 'e', 0x92, 0x01, 0x02}))
                  .find("2 values for 1 entries"),
              std::string::npos);
}

TEST(Corruption, ZstdBombIsRefused) {
    // 80 MiB of zeros compress to a few kilobytes; far beyond what such a file may expand to.
    const std::vector<uint8_t> zeros(80u << 20, 0);
    ms::snapshot s;
    s.info.host.assign(zeros.begin(), zeros.end());
    const auto packed = ms::write_snapshot(s, {ms::compression::zstd, 3});
    ASSERT_LT(packed.size(), 64u * 1024);
    EXPECT_NE(outcome(read_msgpack, packed).find("decompresses beyond"), std::string::npos);
}

TEST(Corruption, TruncatedZstdIsNamed) {
    const auto packed = ms::write_snapshot(make_sample_snapshot(), {ms::compression::zstd, 3});
    const std::span<const uint8_t> cut(packed.data(), packed.size() - 3);
    EXPECT_NE(outcome(read_msgpack, cut).find("zstd"), std::string::npos)
        << outcome(read_msgpack, cut);
}
