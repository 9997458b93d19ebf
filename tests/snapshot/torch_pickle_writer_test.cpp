// The pickle writer on a snapshot recorded by memtrail rather than imported from PyTorch: what
// PyTorch's schema can carry survives, native frames get names, and the result is a fixed point.

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <iterator>

#include "memtrail/snapshot/torch_pickle.hpp"
#include "sample_snapshot.hpp"
#include "test_paths.hpp"

namespace ms = memtrail::snapshot;

namespace {

ms::snapshot through_pickle(const ms::snapshot& s) {
    const auto bytes = ms::write_torch_pickle(s);
    return ms::read_torch_pickle(std::span<const uint8_t>(bytes));
}

}  // namespace

TEST(TorchPickleWriter, SampleKeepsWhatPyTorchsSchemaCarries) {
    const auto sample = ms::test::make_sample_snapshot();
    const auto back = through_pickle(sample);

    ASSERT_EQ(back.traces.size(), 2u);
    const auto& in0 = sample.find_trace(0)->entries;
    const auto& out0 = back.find_trace(0)->entries;
    ASSERT_EQ(out0.size(), in0.size());
    for (size_t i = 0; i < in0.size(); ++i) {
        EXPECT_EQ(out0[i].kind, in0[i].kind) << i;
        EXPECT_EQ(out0[i].address, in0[i].address) << i;  // oom: device_free
        EXPECT_EQ(out0[i].size, in0[i].size) << i;
        EXPECT_EQ(out0[i].stream, in0[i].stream) << i;
        EXPECT_EQ(out0[i].time_ns, in0[i].time_ns / 1000 * 1000) << i;  // PyTorch keeps µs
        EXPECT_EQ(back.string_at(out0[i].name), sample.string_at(in0[i].name)) << i;
        EXPECT_EQ(back.string_at(out0[i].user_metadata), sample.string_at(in0[i].user_metadata));
        EXPECT_EQ(back.stack_at(out0[i].stack).size(), sample.stack_at(in0[i].stack).size());
    }
    EXPECT_EQ(back.find_trace(1)->entries.size(), sample.find_trace(1)->entries.size());

    // A symbolized native frame keeps function, file and line, and stays native.
    const auto& alloc_stack = back.stack_at(out0[1].stack);
    ASSERT_EQ(alloc_stack.size(), 3u);
    const auto& native = back.frame_at(alloc_stack[0]);
    EXPECT_EQ(native.kind, ms::frame_kind::native);
    EXPECT_EQ(back.string_at(native.function),
              "c10::cuda::CUDACachingAllocator::malloc(unsigned long)");
    EXPECT_EQ(back.string_at(native.filename), "/src/c10/cuda/CUDACachingAllocator.cpp");
    EXPECT_EQ(native.line, 1234u);
    EXPECT_EQ(back.frame_at(alloc_stack[1]).kind, ms::frame_kind::python);
    // An unsymbolized one is named by module+offset, its file is the module.
    const auto& raw = back.frame_at(back.stack_at(out0[5].stack)[0]);
    EXPECT_EQ(back.string_at(raw.function), "/usr/lib/libc10_cuda.so+0xdeadbeef");
    EXPECT_EQ(back.string_at(raw.filename), "/usr/lib/libc10_cuda.so");
    EXPECT_EQ(raw.kind, ms::frame_kind::native);

    ASSERT_EQ(back.segments.size(), 2u);
    // Stack ids differ (interned in another order); everything else is equal.
    auto segments_in = sample.segments;
    auto segments_out = back.segments;
    for (auto* list : {&segments_in, &segments_out}) {
        for (auto& seg : *list) {
            seg.stack = ms::no_id;
            seg.time_ns = 0;  // written as time_us
            for (auto& b : seg.blocks) {
                b.stack = ms::no_id;
                b.time_ns = 0;
            }
        }
    }
    EXPECT_EQ(segments_out, segments_in);
    EXPECT_EQ(back.segments[0].blocks[0].time_ns, 1795211106000001000);
    EXPECT_EQ(back.annotations.size(), 2u);
    EXPECT_EQ(back.settings, sample.settings);
}

TEST(TorchPickleWriter, WriteReadIsAFixedPoint) {
    const auto once = through_pickle(ms::test::make_sample_snapshot());
    const auto twice = through_pickle(once);
    EXPECT_TRUE(twice == once);
}

// PyTorch's layout (a frames list per entry, only the frame dicts shared) reads back as the
// shared layout does, and is larger: each entry repeats its list's references.
TEST(TorchPickleWriter, OneFramesListPerEntryReadsTheSame) {
    const auto once = through_pickle(ms::test::make_sample_snapshot());
    const auto shared = ms::write_torch_pickle(once);
    const auto per_entry = ms::write_torch_pickle(once, ms::frames_lists::one_per_entry);
    EXPECT_GT(per_entry.size(), shared.size());
    EXPECT_TRUE(ms::read_torch_pickle(std::span<const uint8_t>(per_entry)) == once);
}

TEST(TorchPickleWriter, EmptySnapshot) {
    const auto back = through_pickle(ms::snapshot{});
    EXPECT_TRUE(back.segments.empty());
    EXPECT_TRUE(back.traces.empty());
}

// A checked-in pickle of the sample pins the writer's output (and seeds the pickle fuzzer).
// MEMTRAIL_UPDATE_GOLDEN=1 rewrites it after a deliberate change.
TEST(TorchPickleWriter, GoldenPickle) {
    const auto path = ms::test::test_data("sample.pickle");
    const auto bytes = ms::write_torch_pickle(ms::test::make_sample_snapshot());
    if (std::getenv("MEMTRAIL_UPDATE_GOLDEN") != nullptr) {
        std::ofstream(path, std::ios::binary)
            .write(reinterpret_cast<const char*>(bytes.data()),
                   static_cast<std::streamsize>(bytes.size()));
    }
    std::ifstream in(path, std::ios::binary);
    const std::vector<uint8_t> golden{std::istreambuf_iterator<char>(in),
                                      std::istreambuf_iterator<char>()};
    EXPECT_EQ(golden, bytes) << "the writer no longer produces " << path;
}

TEST(TorchPickleWriter, InvalidUtf8IsReplacedSoPythonCanLoadIt) {
    ms::snapshot s;
    ms::frame f;
    f.kind = ms::frame_kind::native;
    f.function = s.intern_string("ok \xce\xbb");                  // valid: lambda
    f.filename = s.intern_string("/build/\xff\xfe/lib\xc3.cpp");  // invalid bytes, cut sequence
    s.trace_for(0).entries.push_back({});
    s.trace_for(0).entries.back().stack = s.intern_stack({s.intern_frame(f)});
    const auto back = through_pickle(s);
    const auto& frame = back.frame_at(back.stack_at(back.find_trace(0)->entries[0].stack)[0]);
    EXPECT_EQ(back.string_at(frame.function), "ok \xce\xbb");
    EXPECT_EQ(back.string_at(frame.filename),
              "/build/\xef\xbf\xbd\xef\xbf\xbd/lib\xef\xbf\xbd.cpp");
}
