// Snapshots as torch 2.11 writes them, made by Python's own pickle module
// (torch_pickle_variants.py): frame lines of 2^64-1 and -1, protocols 2, 4 and 5, missing optional
// fields, compile_context and user_metadata; each opens, and survives memtrail's format and the
// way back to a pickle. Skipped where python3 is missing.

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include <unistd.h>

#include "memtrail/snapshot/msgpack_format.hpp"
#include "memtrail/snapshot/torch_pickle.hpp"

namespace ms = memtrail::snapshot;
namespace fs = std::filesystem;

namespace {

class TorchPickleVariants : public ::testing::Test {
  protected:
    void SetUp() override {
        if (std::system("python3 -c 'import pickle' >/dev/null 2>&1") != 0) {
            GTEST_SKIP() << "python3 not found";
        }
        dir_ = fs::temp_directory_path() /
               ("memtrail_variants_" + std::to_string(::getpid()) + "_" +
                ::testing::UnitTest::GetInstance()->current_test_info()->name());
        const std::string command = std::string("python3 '") + MEMTRAIL_SNAPSHOT_TESTS_DIR +
                                    "/torch_pickle_variants.py' '" + dir_.string() + "'";
        ASSERT_EQ(std::system(command.c_str()), 0) << command;
    }
    void TearDown() override { fs::remove_all(dir_); }

    ms::snapshot read(const char* name) const { return ms::read_torch_pickle(dir_ / name); }
    fs::path path(const char* name) const { return dir_ / name; }

    fs::path dir_;
};

// Checks what compiled_model_snapshot() holds, whatever way it came.
void expect_compiled_model(const ms::snapshot& s) {
    const ms::device_trace* trace = s.find_trace(0);
    ASSERT_NE(trace, nullptr);
    ASSERT_EQ(trace->entries.size(), 4u);
    const ms::trace_entry& alloc = trace->entries[1];
    EXPECT_EQ(alloc.kind, ms::action::alloc);
    EXPECT_EQ(s.string_at(alloc.compile_context), "0/0");
    EXPECT_EQ(s.string_at(alloc.user_metadata), "step 3");
    EXPECT_EQ(s.string_at(trace->entries[2].compile_context), "N/A");
    EXPECT_EQ(trace->entries[3].stack, ms::no_id);  // no 'frames' key

    const auto& frames = s.stack_at(alloc.stack);
    ASSERT_EQ(frames.size(), 3u);
    // 2^64-1 and -1 are "no line"; the user's frame keeps its line.
    EXPECT_EQ(s.string_at(s.frame_at(frames[0]).function), "call");
    EXPECT_EQ(s.frame_at(frames[0]).line, 0u);
    EXPECT_EQ(s.frame_at(frames[1]).line, 0u);
    EXPECT_EQ(s.frame_at(frames[2]).line, 42u);
    EXPECT_EQ(s.frame_at(frames[2]).kind, ms::frame_kind::python);

    ASSERT_EQ(s.segments.size(), 1u);
    EXPECT_FALSE(s.segments[0].is_large);
    EXPECT_EQ(s.segments[0].blocks.size(), 1u);
    EXPECT_EQ(s.settings.max_split_size, -1);
}

}  // namespace

TEST_F(TorchPickleVariants, FrameLinesBeyondInt64OpenInEveryProtocol) {
    for (const char* name :
         {"compiled_protocol2.pickle", "compiled_protocol4.pickle", "compiled_protocol5.pickle"}) {
        SCOPED_TRACE(name);
        expect_compiled_model(read(name));
    }
}

TEST_F(TorchPickleVariants, ProtocolsGiveTheSameSnapshot) {
    EXPECT_EQ(read("compiled_protocol2.pickle"), read("compiled_protocol5.pickle"));
    EXPECT_EQ(read("compiled_protocol4.pickle"), read("compiled_protocol5.pickle"));
}

TEST_F(TorchPickleVariants, CompileContextAndMetadataSurviveMemtrailsFormatAndBack) {
    const ms::snapshot original = read("compiled_protocol5.pickle");
    const auto packed = ms::write_snapshot(original);
    const ms::snapshot unpacked = ms::read_snapshot(std::span<const uint8_t>(packed));
    EXPECT_EQ(unpacked, original);
    expect_compiled_model(unpacked);

    const auto pickled = ms::write_torch_pickle(unpacked);
    expect_compiled_model(ms::read_torch_pickle(std::span<const uint8_t>(pickled)));

    // Python sees the strings where PyTorch put them, and "no line" as 0.
    const fs::path written = path("written.pickle");
    ms::write_torch_pickle(unpacked, written);
    const std::string command =
        "python3 -c \"import pickle, sys; "
        "e = pickle.load(open(sys.argv[1], 'rb'))['device_traces'][0][1]; "
        "ok = e['compile_context'] == '0/0' and e['user_metadata'] == 'step 3' "
        "and [f['line'] for f in e['frames']] == [0, 0, 42]; "
        "sys.exit(0 if ok else 1)\" '" +
        written.string() + "'";
    EXPECT_EQ(std::system(command.c_str()), 0) << command;
}

TEST_F(TorchPickleVariants, MissingOptionalFieldsOpen) {
    const ms::snapshot s = read("missing_fields.pickle");
    ASSERT_EQ(s.segments.size(), 1u);
    EXPECT_EQ(s.segments[0].blocks[0].state, ms::block_state::active_allocated);
    EXPECT_EQ(s.segments[0].blocks[0].stack, ms::no_id);
    const ms::device_trace* trace = s.find_trace(0);
    ASSERT_NE(trace, nullptr);
    ASSERT_EQ(trace->entries.size(), 3u);
    EXPECT_EQ(trace->entries[0].time_ns, 0);
    EXPECT_EQ(trace->entries[0].compile_context, ms::no_id);
    EXPECT_EQ(trace->entries[1].kind, ms::action::oom);
    EXPECT_EQ(trace->entries[1].address, 123u);  // device_free
    EXPECT_EQ(trace->entries[2].kind, ms::action::snapshot);
    EXPECT_EQ(s.settings, ms::allocator_settings{});
}

TEST_F(TorchPickleVariants, NegativeStreamAndBytearrayOpen) {
    const ms::snapshot s = read("signed_stream_protocol5.pickle");
    EXPECT_EQ(s.find_trace(0)->entries[0].stream, UINT64_MAX);  // int64 -1, kept as its bits
}
