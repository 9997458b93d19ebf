// The accounting of a device's used memory read for people: who holds what outside the
// allocator, the row of each OOM, and the check that the parts add up.

#include <gtest/gtest.h>

#include "memtrail/analysis/outside_accounting.hpp"

namespace ma = memtrail::analysis;
namespace ms = memtrail::snapshot;

namespace {

ms::memory_accounting row(std::string moment, int64_t time_ns) {
    ms::memory_accounting a;
    a.moment = std::move(moment);
    a.time_ns = time_ns;
    a.device_used = 10ull << 30;
    a.allocator_reserved = (10ull << 30) - (1328ull << 20);
    a.outside_by_library = {{"NCCL", 688ull << 20}, {"cuBLAS", 128ull << 20}};
    a.context = 512ull << 20;
    return a;
}

}  // namespace

TEST(OutsideAccounting, NamesWhoHoldsTheMemory) {
    EXPECT_EQ(ma::outside_split_text(row("oom", 5)),
              "NCCL 688MiB, cuBLAS 128MiB, context 512MiB, other processes 0B");
    ms::memory_accounting unsplit = row("oom", 5);
    unsplit.unsplit = "NVML does not list this process";
    EXPECT_EQ(ma::outside_split_text(unsplit),
              "NCCL 688MiB, cuBLAS 128MiB, context and other processes 512MiB (NVML does not "
              "list this process)");
}

TEST(OutsideAccounting, TheRowOfEachOomAndTheLatest) {
    ms::snapshot s;
    s.outside.accounting = {row("start", 1), row("oom", 10), row("oom", 20), row("snapshot", 30)};
    s.outside.accounting[2].device = 1;
    EXPECT_EQ(ma::accounting_for_oom(s, 0, 9), &s.outside.accounting[1]);
    EXPECT_EQ(ma::accounting_for_oom(s, 1, 9), &s.outside.accounting[2]);
    EXPECT_EQ(ma::accounting_for_oom(s, 0, 11), nullptr);
    EXPECT_EQ(ma::latest_accounting(s, 0), &s.outside.accounting[3]);
    EXPECT_EQ(ma::latest_accounting(s, 2), nullptr);
}

TEST(OutsideAccounting, EveryByteAddsUp) {
    ms::memory_accounting a = row("snapshot", 1);
    EXPECT_EQ(ma::unaccounted_bytes(a), 0);
    a.device_used += 4096;
    EXPECT_EQ(ma::unaccounted_bytes(a), 4096);
}

TEST(OutsideAccounting, PinnedHostMemoryByLibrary) {
    ms::snapshot s;
    ms::outside_event pinned{.is_free = false,
                             .kind = ms::outside_kind::pinned_host,
                             .device = 0,
                             .address = 1,
                             .size = 4096,
                             .stream = 0,
                             .time_ns = 0,
                             .call = s.intern_string("cudaHostAlloc"),
                             .library = s.intern_string("PyTorch (outside its allocator)"),
                             .stack = 0};
    ms::outside_event device = pinned;
    device.kind = ms::outside_kind::device;
    s.outside.live = {pinned, device, pinned};
    const auto by_library = ma::pinned_host_by_library(s);
    ASSERT_EQ(by_library.size(), 1u);
    EXPECT_EQ(by_library[0], ms::library_bytes("PyTorch (outside its allocator)", 8192));
}
