// memtrail's own format: exact round trips (memory, plain file, zstd file, PyTorch anchors), the
// checked-in golden file, and the size target of 30 bytes per trace event before compression.

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>

#include <sys/wait.h>
#include <unistd.h>

#include "memtrail/replay/synthetic_trace.hpp"
#include "memtrail/snapshot/msgpack_format.hpp"
#include "memtrail/snapshot/torch_pickle.hpp"
#include "sample_snapshot.hpp"
#include "test_paths.hpp"

namespace ms = memtrail::snapshot;
namespace fs = std::filesystem;
using ms::test::anchor;
using ms::test::make_sample_snapshot;

namespace {

std::vector<uint8_t> file_bytes(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// A fresh folder per test, removed afterwards.
class MsgpackFiles : public ::testing::Test {
  protected:
    void SetUp() override {
        folder_ = fs::temp_directory_path() /
                  ("memtrail_msgpack_test_" + std::to_string(::getpid()) + "_" +
                   ::testing::UnitTest::GetInstance()->current_test_info()->name());
        fs::create_directories(folder_);
    }
    void TearDown() override { fs::remove_all(folder_); }
    fs::path folder_;
};

}  // namespace

TEST(MsgpackFormat, RoundTripInMemory) {
    const auto sample = make_sample_snapshot();
    const auto bytes = ms::write_snapshot(sample);
    ASSERT_GE(bytes.size(), 8u);
    EXPECT_EQ(std::string(bytes.begin(), bytes.begin() + 8), "MEMTRAIL");
    EXPECT_TRUE(ms::looks_like_snapshot(bytes));
    const auto back = ms::read_snapshot(std::span<const uint8_t>(bytes));
    EXPECT_TRUE(back == sample);
    // Spot checks that equality really covers the parts.
    EXPECT_EQ(back.find_trace(0)->dropped, 17u);
    EXPECT_EQ(back.segments[1].pool_id_second, UINT64_MAX);
    EXPECT_EQ(back.stats.at(1).at("reserved_bytes.all.peak"), -1);
    EXPECT_EQ(back.info.devices[1].name, "NVIDIA H200");
    EXPECT_EQ(ms::write_snapshot(back), bytes);
}

TEST(MsgpackFormat, EmptySnapshotRoundTrips) {
    const ms::snapshot empty;
    const auto bytes = ms::write_snapshot(empty);
    EXPECT_TRUE(ms::read_snapshot(std::span<const uint8_t>(bytes)) == empty);
}

TEST(MsgpackFormat, ZstdInMemory) {
    const auto sample = make_sample_snapshot();
    const auto bytes = ms::write_snapshot(sample, {ms::compression::zstd, 3});
    ASSERT_GE(bytes.size(), 4u);
    EXPECT_EQ(bytes[0], 0x28);
    EXPECT_EQ(bytes[3], 0xfd);
    EXPECT_TRUE(ms::looks_like_snapshot(bytes));
    EXPECT_TRUE(ms::read_snapshot(std::span<const uint8_t>(bytes)) == sample);
}

TEST_F(MsgpackFiles, PlainAndZstdFiles) {
    const auto sample = make_sample_snapshot();
    const auto plain = folder_ / "sample.memtrail";
    const auto packed = folder_ / "sample.memtrail.zst";
    ms::write_snapshot(sample, plain);
    ms::write_snapshot(sample, packed);
    EXPECT_EQ(file_bytes(plain), ms::write_snapshot(sample));
    const auto packed_bytes = file_bytes(packed);
    ASSERT_GE(packed_bytes.size(), 4u);
    EXPECT_EQ(packed_bytes[0], 0x28) << ".zst chooses zstd";
    EXPECT_TRUE(ms::read_snapshot(plain) == sample);
    EXPECT_TRUE(ms::read_snapshot(packed) == sample);

    // The option overrides the extension both ways.
    const auto forced = folder_ / "forced.memtrail";
    ms::write_snapshot(sample, forced, {ms::compression::zstd, 19});
    EXPECT_EQ(file_bytes(forced)[0], 0x28);
    const auto unpacked = folder_ / "unpacked.zst";
    ms::write_snapshot(sample, unpacked, {ms::compression::none, 3});
    EXPECT_EQ(file_bytes(unpacked)[0], 'M');

    // Atomic writes leave no temporary files behind, and overwrite in place.
    ms::write_snapshot(ms::snapshot{}, plain);
    EXPECT_TRUE(ms::read_snapshot(plain) == ms::snapshot{});
    size_t files = 0;
    for (const auto& entry : fs::directory_iterator(folder_)) {
        EXPECT_EQ(entry.path().extension() == ".tmp", false) << entry.path();
        ++files;
    }
    EXPECT_EQ(files, 4u);
}

TEST_F(MsgpackFiles, WritingRemovesTemporaryFilesOfWritersThatDied) {
    // A writer killed mid-write leaves "<target>.<pid>.<n>.tmp"; a dead pid is one reaped here.
    const pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
        ::_exit(0);
    }
    ASSERT_EQ(::waitpid(child, nullptr, 0), child);
    const std::string dead = std::to_string(child);
    const std::string alive = std::to_string(::getpid());
    const auto target = folder_ / "run.memtrail";
    const fs::path left[] = {
        folder_ / ("run.memtrail." + dead + ".0.tmp"),    // stale: removed
        folder_ / ("run.memtrail." + dead + ".17.tmp"),   // stale: removed
        folder_ / ("run.memtrail." + alive + ".9.tmp"),   // a running writer's: kept
        folder_ / ("other.memtrail." + dead + ".0.tmp"),  // another target's: kept
        folder_ / ("run.memtrail." + dead + ".tmp"),      // not a name the writer makes: kept
    };
    for (const auto& path : left) {
        std::ofstream(path) << "partial";
    }
    ms::write_snapshot(ms::snapshot{}, target);
    EXPECT_TRUE(ms::read_snapshot(target) == ms::snapshot{});
    EXPECT_FALSE(fs::exists(left[0]));
    EXPECT_FALSE(fs::exists(left[1]));
    EXPECT_TRUE(fs::exists(left[2]));
    EXPECT_TRUE(fs::exists(left[3]));
    EXPECT_TRUE(fs::exists(left[4]));
}

TEST_F(MsgpackFiles, AFolderInTheTargetsPlaceIsRefusedByNameAndLeavesNoTemporaryFile) {
    // A folder in the target's place is refused before anything is written (output_file.hpp).
    const auto target = folder_ / "taken.memtrail";
    fs::create_directories(target / "inside");
    try {
        ms::write_snapshot(ms::snapshot{}, target);
        FAIL() << "no error";
    } catch (const std::system_error& error) {
        const std::string message = error.what();
        EXPECT_NE(message.find("is a directory, not a file to write"), std::string::npos)
            << message;
        EXPECT_NE(message.find(target.string() + ":"), std::string::npos) << message;
        EXPECT_EQ(message.find(".tmp"), std::string::npos) << message;
    }
    for (const auto& entry : fs::directory_iterator(folder_)) {
        EXPECT_NE(entry.path().extension(), ".tmp") << entry.path();
    }
}

TEST_F(MsgpackFiles, MissingFileAndFolderThrowSystemError) {
    EXPECT_THROW(ms::read_snapshot(folder_ / "nope.memtrail"), std::system_error);
    EXPECT_THROW(ms::write_snapshot(ms::snapshot{}, folder_ / "no" / "such" / "x.memtrail"),
                 std::system_error);
}

TEST_F(MsgpackFiles, AnchorsRoundTripThroughMsgpack) {
    for (const char* name : {"streams__default.pickle", "transformer__default.pickle"}) {
        const auto model = ms::read_torch_pickle(anchor(name));
        for (const char* extension : {".memtrail", ".memtrail.zst"}) {
            const auto path = folder_ / (std::string(name) + extension);
            ms::write_snapshot(model, path);
            EXPECT_TRUE(ms::read_snapshot(path) == model) << name << extension;
        }
    }
}

// The golden file pins the format: today's writer must produce it byte for byte, and the reader
// must keep reading it. MEMTRAIL_UPDATE_GOLDEN=1 rewrites it after a deliberate format change.
TEST(MsgpackFormat, GoldenFile) {
    const auto golden = ms::test::test_data("golden_v1.memtrail");
    const auto sample = make_sample_snapshot();
    const auto bytes = ms::write_snapshot(sample);
    if (std::getenv("MEMTRAIL_UPDATE_GOLDEN") != nullptr) {
        std::ofstream(golden, std::ios::binary)
            .write(reinterpret_cast<const char*>(bytes.data()),
                   static_cast<std::streamsize>(bytes.size()));
    }
    ASSERT_TRUE(fs::exists(golden)) << golden;
    EXPECT_EQ(file_bytes(golden), bytes) << "the writer no longer produces " << golden;
    EXPECT_TRUE(ms::read_snapshot(golden) == sample);
}

// The same snapshot compressed: zstd's output may change between zstd versions, so only reading
// is pinned.
TEST(MsgpackFormat, GoldenZstdFileReads) {
    const auto golden = ms::test::test_data("golden_v1.memtrail.zst");
    const auto sample = make_sample_snapshot();
    if (std::getenv("MEMTRAIL_UPDATE_GOLDEN") != nullptr) {
        ms::write_snapshot(sample, golden);
    }
    ASSERT_TRUE(fs::exists(golden)) << golden;
    EXPECT_EQ(file_bytes(golden)[0], 0x28);
    EXPECT_TRUE(ms::read_snapshot(golden) == sample);
}

namespace {
ms::snapshot sample_with_job() {
    auto sample = make_sample_snapshot();
    sample.info.job = {"slurm-81723", 5, 1, 16};
    return sample;
}
}  // namespace

// The job identity pins its own golden file; the sample's (no job) stays byte for byte as it
// was, so files of processes outside a job did not change.
TEST(MsgpackFormat, JobIdentityGoldenFile) {
    const auto golden = ms::test::test_data("golden_v1_job.memtrail");
    const auto sample = sample_with_job();
    const auto bytes = ms::write_snapshot(sample);
    if (std::getenv("MEMTRAIL_UPDATE_GOLDEN") != nullptr) {
        std::ofstream(golden, std::ios::binary)
            .write(reinterpret_cast<const char*>(bytes.data()),
                   static_cast<std::streamsize>(bytes.size()));
    }
    ASSERT_TRUE(fs::exists(golden)) << golden;
    EXPECT_EQ(file_bytes(golden), bytes) << "the writer no longer produces " << golden;
    const auto back = ms::read_snapshot(golden);
    EXPECT_TRUE(back == sample);
    EXPECT_EQ(back.info.job.job_id, "slurm-81723");
    EXPECT_EQ(back.info.job.rank, 5);
    EXPECT_EQ(back.info.job.local_rank, 1);
    EXPECT_EQ(back.info.job.world_size, 16);
    EXPECT_EQ(back.info.host, "gpu-node-7");
}

TEST(MsgpackFormat, FilesWithoutAJobReadAsUnknownIdentity) {
    const auto back = ms::read_snapshot(ms::test::test_data("golden_v1.memtrail"));
    EXPECT_FALSE(back.info.job.known());
    EXPECT_EQ(back.info.job.rank, -1);
    EXPECT_EQ(back.info.job.world_size, 0);
    EXPECT_TRUE(back.info.job == ms::job_identity{});
}

// A rank alone (torchrun without a job id) is known and round trips; the rest stay unknown.
TEST(MsgpackFormat, PartlyKnownJobIdentityRoundTrips) {
    auto sample = make_sample_snapshot();
    sample.info.job.rank = 0;
    ASSERT_TRUE(sample.info.job.known());
    const auto bytes = ms::write_snapshot(sample);
    EXPECT_NE(bytes, ms::write_snapshot(make_sample_snapshot()));
    const auto back = ms::read_snapshot(std::span<const uint8_t>(bytes));
    EXPECT_TRUE(back == sample);
    EXPECT_EQ(back.info.job.rank, 0);
    EXPECT_EQ(back.info.job.job_id, "");
    EXPECT_EQ(back.info.job.local_rank, -1);
}

TEST(MsgpackFormat, MillionEventsFitThirtyBytesEachBeforeCompression) {
    constexpr size_t events = 1'000'000;
    const auto synthetic = memtrail::replay::make_format_trace(events);
    const auto bytes = ms::write_snapshot(synthetic);
    const double per_event = static_cast<double>(bytes.size()) / events;
    RecordProperty("bytes_per_event", std::to_string(per_event));
    std::printf("1M synthetic events: %zu bytes, %.2f bytes per event (tables included)\n",
                bytes.size(), per_event);
    EXPECT_LE(per_event, 30.0);
    EXPECT_TRUE(ms::read_snapshot(std::span<const uint8_t>(bytes)) == synthetic);
}
