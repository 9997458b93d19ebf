#pragma once
// Allocations a process made outside memtrail's caching allocator while PyTorch allocates through
// it (memtrail run): cuBLAS and cuDNN workspaces, NCCL buffers, extensions' cudaMallocAsync,
// pinned host memory. Kept apart from the allocator's trace, so that the snapshot's peaks and
// counters stay PyTorch's own, and written to the snapshot's outside_memory section.

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "memtrail/core/device.hpp"
#include "memtrail/snapshot/outside_memory.hpp"

namespace memtrail::recorder::detail {

// Events kept at most: a program that allocates outside the allocator in a loop keeps its live
// allocations (always complete) and its first events; later ones are counted as dropped.
inline constexpr size_t max_outside_events = size_t{1} << 20;

struct outside_record {
    bool is_free = false;
    snapshot::outside_kind kind = snapshot::outside_kind::device;
    int device = 0;
    device_address address = 0;
    uint64_t size = 0;
    stream_handle stream = 0;
    int64_t time_ns = 0;
    uint64_t context = 0;  // the call_context of the call (its stack)
    uint32_t call = 0;     // index into names()
    uint32_t library = 0;  // index into names()
};

class outside_allocations {
  public:
    // Adds a live allocation and its event; false (nothing added) when one of the same kind
    // already starts at that address.
    bool add(outside_record record, std::string_view call, std::string_view library);
    // The live allocation of `kind` at `address`, now freed (its free event added); nullopt
    // when there is none.
    std::optional<outside_record> remove(snapshot::outside_kind kind, device_address address,
                                         stream_handle stream, int64_t time_ns, uint64_t context);

    struct contents {
        std::vector<outside_record> events;
        uint64_t dropped = 0;
        std::vector<outside_record> live;
        std::vector<std::string> names;  // what the records' call and library index
    };
    contents copy() const;

    // Live device bytes of `device` by library, the most first; and live pinned host bytes.
    std::vector<snapshot::library_bytes> device_bytes_by_library(int device) const;
    uint64_t pinned_host_bytes() const;

  private:
    uint32_t name_index(std::string_view name);    // under mutex_
    void add_event(const outside_record& record);  // under mutex_

    mutable std::mutex mutex_;
    std::map<std::tuple<snapshot::outside_kind, device_address>, outside_record> live_;
    std::vector<outside_record> events_;
    uint64_t dropped_ = 0;
    std::vector<std::string> names_{""};
    std::map<std::string, uint32_t, std::less<>> name_indexes_{{"", 0}};
};

}  // namespace memtrail::recorder::detail
