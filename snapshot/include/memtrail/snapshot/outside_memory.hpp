#pragma once
// Memory a process holds outside its caching allocator, and how a device's used memory divides.
//
// Under `memtrail run`, a PyTorch process's own requests come from memtrail's caching allocator;
// every other allocation of the process (cuBLAS and cuDNN workspaces, NCCL buffers, Triton,
// extensions calling cudaMallocAsync, pinned host memory) reaches CUDA untouched and is recorded
// here, with the library that asked for it. The accounting rows divide the device's used memory
// (cudaMemGetInfo's total - free) at the start, at each out-of-memory and at the snapshot into
// the allocator's reserved bytes, the outside allocations by library, this process's CUDA
// context and other processes, so that every byte is accounted for.

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace memtrail::snapshot {

using string_id = uint32_t;
using stack_id = uint32_t;

enum class outside_kind : uint8_t {
    device,       // cudaMalloc, cuMemAlloc, cudaMallocAsync, cuMemCreate, cudaMallocPitch
    managed,      // cudaMallocManaged: counted where it lives now, shown apart
    pinned_host,  // cudaHostAlloc, cudaMallocHost, cuMemHostAlloc, cudaHostRegister
};
inline constexpr int outside_kind_count = 3;
// "device", "managed", "pinned host".
std::string_view outside_kind_name(outside_kind kind);

// One allocation outside the caching allocator, or its free.
struct outside_event {
    bool is_free = false;
    outside_kind kind = outside_kind::device;
    int8_t device = 0;
    uint64_t address = 0;  // cuMemCreate: the allocation handle
    uint64_t size = 0;
    uint64_t stream = 0;    // the stream of an async call, else 0
    int64_t time_ns = 0;    // wall clock, ns since the Unix epoch
    string_id call = 0;     // the CUDA call: "cuMemAlloc", "cudaHostAlloc"
    string_id library = 0;  // who asked: "cuBLAS", "NCCL", "libfoo.so"
    stack_id stack = 0;     // its native (and Python) stack, where recorded
    bool operator==(const outside_event&) const = default;
};

// One library's live device bytes outside the allocator.
using library_bytes = std::pair<std::string, uint64_t>;

// A device's used memory at one moment, divided so that the parts add up to it:
// device_used = allocator_reserved + outside (the sum of outside_by_library) + context
// + other_processes. When the process's own share cannot be measured (no NVML, or its pids are
// those of another namespace), `context` holds the whole remainder and `unsplit` says why.
struct memory_accounting {
    std::string moment;  // "start", "oom" or "snapshot"
    int8_t device = 0;
    int64_t time_ns = 0;
    uint64_t device_total = 0;
    uint64_t device_used = 0;  // total - free, as cudaMemGetInfo reported it
    uint64_t allocator_reserved = 0;
    std::vector<library_bytes> outside_by_library;  // the most bytes first
    uint64_t context = 0;  // this process's memory beyond the two above: the CUDA context
    uint64_t other_processes = 0;
    std::string unsplit;       // "" when split, else why context holds other processes' too
    uint64_t pinned_host = 0;  // live pinned host bytes of the process (not device memory)
    bool operator==(const memory_accounting&) const = default;

    uint64_t outside() const;
};

struct outside_memory {
    std::vector<outside_event> events;          // oldest first
    uint64_t dropped = 0;                       // events past the recorder's bound, not kept
    std::vector<outside_event> live;            // allocations not freed when the snapshot was taken
    std::vector<memory_accounting> accounting;  // in time order
    bool operator==(const outside_memory&) const = default;
    bool empty() const { return events.empty() && live.empty() && accounting.empty(); }
};

// The library a native module stands for: libcublas/libcublasLt -> "cuBLAS", libnccl -> "NCCL",
// libcudnn* -> "cuDNN", libtorch_cuda -> "PyTorch (outside its allocator)", a Triton module
// -> "Triton", anything else its file name ("libfoo.so"); "" for an empty path.
std::string library_of_module(std::string_view module_path);

}  // namespace memtrail::snapshot
