// The outside_memory section: memory a process held outside its caching allocator and the
// accounting of the device's used memory. Exact round trips, files without it (every earlier
// file) and files of a later version of it, refused bad values, and the library names.

#include <gtest/gtest.h>
#include <msgpack.hpp>

#include <string>

#include "memtrail/snapshot/format_error.hpp"
#include "memtrail/snapshot/msgpack_format.hpp"
#include "sample_snapshot.hpp"

namespace ms = memtrail::snapshot;

namespace {

ms::snapshot with_outside_memory() {
    ms::snapshot s = ms::test::make_sample_snapshot();
    const ms::string_id call = s.intern_string("cuMemAlloc");
    const ms::string_id cublas = s.intern_string("cuBLAS");
    const ms::string_id host_call = s.intern_string("cudaHostAlloc");
    const ms::string_id fake = s.intern_string("libfakeblas.so");
    const ms::stack_id stack = static_cast<ms::stack_id>(s.stacks().size() - 1);
    const ms::outside_event workspace{.is_free = false,
                                      .kind = ms::outside_kind::device,
                                      .device = 1,
                                      .address = 0x7f0000000000,
                                      .size = 64ull << 20,
                                      .stream = 0,
                                      .time_ns = 1795211106018632000,
                                      .call = call,
                                      .library = cublas,
                                      .stack = stack};
    ms::outside_event pinned = workspace;
    pinned.kind = ms::outside_kind::pinned_host;
    pinned.device = 0;
    pinned.address = UINT64_MAX - 4096;
    pinned.size = 4096;
    pinned.call = host_call;
    pinned.library = fake;
    ms::outside_event freed = pinned;
    freed.is_free = true;
    freed.stream = 0xdeadbeef;
    s.outside.events = {workspace, pinned, freed};
    s.outside.dropped = 3;
    s.outside.live = {workspace};
    s.outside.accounting = {
        {.moment = "start",
         .device = 1,
         .time_ns = 1795211106018631000,
         .device_total = 150109880320ull,
         .device_used = 600ull << 20,
         .allocator_reserved = 0,
         .outside_by_library = {},
         .context = 536ull << 20,
         .other_processes = 64ull << 20,
         .unsplit = "",
         .pinned_host = 0},
        {.moment = "oom",
         .device = 1,
         .time_ns = 1795211106018633000,
         .device_total = 150109880320ull,
         .device_used = 150000000000ull,
         .allocator_reserved = 140000000000ull,
         .outside_by_library = {{"NCCL", 688ull << 20}, {"cuBLAS", 128ull << 20}},
         .context = 512ull << 20,
         .other_processes = 0,
         .unsplit = "NVML is not available",
         .pinned_host = 4096},
    };
    return s;
}

std::vector<uint8_t> body_with_outside_section(const msgpack::sbuffer& section) {
    msgpack::sbuffer file;
    file.write("MEMTRAIL", 8);
    msgpack::packer<msgpack::sbuffer> pack(file);
    pack.pack_uint32(1);
    pack.pack_map(1);
    pack.pack(std::string("outside_memory"));
    file.write(section.data(), section.size());
    return {file.data(), file.data() + file.size()};
}

}  // namespace

TEST(OutsideMemory, RoundTripsExactly) {
    const ms::snapshot sample = with_outside_memory();
    const auto bytes = ms::write_snapshot(sample);
    const ms::snapshot back = ms::read_snapshot(std::span<const uint8_t>(bytes));
    EXPECT_TRUE(back == sample);
    ASSERT_EQ(back.outside.events.size(), 3u);
    EXPECT_EQ(back.outside.events[1].kind, ms::outside_kind::pinned_host);
    EXPECT_EQ(back.outside.events[2].stream, 0xdeadbeefu);
    EXPECT_EQ(back.string_at(back.outside.live[0].library), "cuBLAS");
    EXPECT_EQ(back.outside.accounting[1].outside(), (688ull + 128) << 20);
    EXPECT_EQ(back.outside.accounting[1].unsplit, "NVML is not available");
    EXPECT_EQ(ms::write_snapshot(back), bytes);
}

TEST(OutsideMemory, ASnapshotWithoutItWritesNoSection) {
    // Files stay as they were (the golden file test reads one written before the section).
    const auto bytes = ms::write_snapshot(ms::test::make_sample_snapshot());
    const std::string text(bytes.begin(), bytes.end());
    EXPECT_EQ(text.find("outside_memory"), std::string::npos);
    const auto with = ms::write_snapshot(with_outside_memory());
    EXPECT_NE(std::string(with.begin(), with.end()).find("outside_memory"), std::string::npos);
}

TEST(OutsideMemory, ALaterVersionsKeysAndFieldsAreSkipped) {
    msgpack::sbuffer section;
    msgpack::packer<msgpack::sbuffer> pack(section);
    pack.pack_map(3);
    pack.pack(std::string("version"));
    pack.pack_uint32(2);
    pack.pack(std::string("a_later_key"));
    pack.pack(std::vector<int>{1, 2, 3});
    pack.pack(std::string("events"));
    pack.pack_array(1);
    pack.pack_array(11);  // one field more than version 1's
    pack.pack_false();
    pack.pack_uint8(0);
    pack.pack_int64(0);
    pack.pack_uint64(4096);
    pack.pack_uint64(512);
    pack.pack_uint64(0);
    pack.pack_int64(5);
    pack.pack_uint32(0);
    pack.pack_uint32(0);
    pack.pack_uint32(0);
    pack.pack(std::string("a later field"));
    const auto bytes = body_with_outside_section(section);
    const ms::snapshot back = ms::read_snapshot(std::span<const uint8_t>(bytes));
    ASSERT_EQ(back.outside.events.size(), 1u);
    EXPECT_EQ(back.outside.events[0].address, 4096u);
    EXPECT_EQ(back.outside.events[0].size, 512u);
}

TEST(OutsideMemory, BadValuesAreRefusedWithWhatAndWhere) {
    msgpack::sbuffer section;
    msgpack::packer<msgpack::sbuffer> pack(section);
    pack.pack_map(1);
    pack.pack(std::string("live"));
    pack.pack_array(1);
    pack.pack_array(10);
    pack.pack_false();
    pack.pack_uint8(7);  // no such kind
    for (int i = 0; i < 8; ++i) {
        pack.pack_uint8(0);
    }
    const auto bytes = body_with_outside_section(section);
    try {
        ms::read_snapshot(std::span<const uint8_t>(bytes));
        FAIL() << "an unknown memory kind was read";
    } catch (const ms::format_error& error) {
        EXPECT_NE(std::string(error.what()).find("memory kind 7 is unknown"), std::string::npos)
            << error.what();
        EXPECT_NE(std::string(error.what()).find("a live outside allocation"), std::string::npos)
            << error.what();
    }
}

TEST(OutsideMemory, LibrariesAreNamedForPeople) {
    EXPECT_EQ(ms::library_of_module("/usr/lib/x86_64-linux-gnu/libcublasLt.so.12"), "cuBLAS");
    EXPECT_EQ(ms::library_of_module("/opt/nvidia/libcublas.so.12.8.4.1"), "cuBLAS");
    EXPECT_EQ(ms::library_of_module("/site-packages/nvidia/nccl/lib/libnccl.so.2"), "NCCL");
    EXPECT_EQ(ms::library_of_module("/site-packages/nvidia/cudnn/lib/libcudnn_engines.so.9"),
              "cuDNN");
    EXPECT_EQ(ms::library_of_module("/site-packages/torch/lib/libtorch_cuda.so"),
              "PyTorch (outside its allocator)");
    EXPECT_EQ(ms::library_of_module("/home/me/.triton/cache/ab12/cuda_utils.so"), "Triton");
    EXPECT_EQ(ms::library_of_module("/tmp/build/libfakeblas.so"), "libfakeblas.so");
    EXPECT_EQ(ms::library_of_module("train"), "train");
    EXPECT_EQ(ms::library_of_module(""), "");
}
