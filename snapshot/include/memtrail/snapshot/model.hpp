#pragma once
// The snapshot model: one in-memory description of an allocator's state and history that the
// recorder writes, the PyTorch pickle reader/writer converts, and the viewer and CLI read.
//
// Strings, frames and stacks are interned: trace entries and blocks refer to a stack by id, a
// stack is a list of frame ids, a frame refers to strings by id. Id 0 is always "none" (the
// empty string, the empty frame, the empty stack), so a default-constructed entry has no stack.

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace memtrail::snapshot {

using string_id = uint32_t;
using frame_id = uint32_t;
using stack_id = uint32_t;
inline constexpr uint32_t no_id = 0;

// Every kind of trace entry. The first nine are PyTorch's actions; the annotation kinds are
// memtrail's own (PyTorch keeps annotations apart, in external_annotations).
enum class action : uint8_t {
    alloc,
    free_requested,
    free_completed,
    segment_alloc,
    segment_free,
    segment_map,
    segment_unmap,
    snapshot,
    oom,
    annotation_start,
    annotation_end,
    annotation_marker,
};
inline constexpr int action_count = 12;

// PyTorch's spelling of an action ("alloc", "free_requested", ...; annotations: "user_start" ...).
std::string_view action_name(action a);
// Inverse of action_name; false when the name is not one of them.
bool parse_action(std::string_view name, action& out);

enum class frame_kind : uint8_t { native, python };

struct frame {
    string_id function = no_id;  // demangled name, or Python function name
    string_id filename = no_id;  // source file, where known
    uint32_t line = 0;           // 0: unknown
    string_id module = no_id;    // shared object / executable path (native frames)
    uint64_t module_offset = 0;  // address relative to the module's load base
    string_id build_id = no_id;  // hex GNU build id of the module, where present
    frame_kind kind = frame_kind::native;
    bool operator==(const frame&) const = default;
};

// One event in a device's history. A trace holds up to hundreds of millions of them: the
// fields are ordered so that none is padded (64 bytes).
struct trace_entry {
    action kind = action::alloc;
    int8_t device = 0;
    uint32_t thread = 0;          // small per-process thread number
    uint64_t address = 0;         // for oom: the device's free bytes, as PyTorch records it
    uint64_t size = 0;            // PyTorch's `size`: requested bytes for alloc/free, block size
                                  // for segments; for oom the rounded request
    uint64_t requested_size = 0;  // the caller's request (alloc/free), else 0
    uint64_t stream = 0;
    int64_t time_ns = 0;  // wall clock, ns since the Unix epoch
    stack_id stack = no_id;
    string_id user_metadata = no_id;    // per-thread metadata string at the time of the event
    string_id compile_context = no_id;  // PyTorch's compile_context ("N/A" when none)
    string_id name = no_id;             // annotation name (annotation_* kinds)
    bool operator==(const trace_entry&) const = default;
};
static_assert(sizeof(trace_entry) == 64, "trace_entry is kept at 64 bytes, without padding");

enum class block_state : uint8_t { active_allocated, active_pending_free, inactive };
std::string_view block_state_name(block_state s);  // PyTorch's spelling
bool parse_block_state(std::string_view name, block_state& out);

struct block {
    uint64_t address = 0;
    uint64_t size = 0;
    uint64_t requested_size = 0;
    block_state state = block_state::inactive;
    stack_id stack = no_id;  // where it was last allocated (active blocks)
    int64_t time_ns = 0;     // when it was last allocated, 0 if unknown
    bool operator==(const block&) const = default;
};

struct segment {
    int8_t device = 0;
    uint64_t address = 0;
    uint64_t total_size = 0;
    uint64_t allocated_size = 0;
    uint64_t active_size = 0;
    uint64_t requested_size = 0;
    uint64_t stream = 0;
    bool is_large = true;  // PyTorch's segment_type: "large" or "small"
    bool is_expandable = false;
    uint64_t pool_id_first = 0;  // PyTorch's segment_pool_id (CUDA graph pools)
    uint64_t pool_id_second = 0;
    stack_id stack = no_id;  // where the segment was created
    int64_t time_ns = 0;
    std::vector<block> blocks;  // in address order, tiling the segment
    bool operator==(const segment&) const = default;
};

// PyTorch's external_annotations entry (record_function ranges) and memtrail's user ranges.
struct annotation {
    bool is_start = true;  // PyTorch's stage: "START" / "END"
    string_id name = no_id;
    int8_t device = 0;
    int64_t time_ns = 0;
    bool operator==(const annotation&) const = default;
};

struct device_trace {
    int8_t device = 0;
    std::vector<trace_entry> entries;  // oldest first
    uint64_t dropped = 0;              // entries lost to the ring buffer's wrap
    bool operator==(const device_trace&) const = default;
};

struct device_properties {
    int8_t device = 0;
    std::string name;
    uint64_t total_memory = 0;
    int32_t major = 0;
    int32_t minor = 0;
    int32_t multiprocessor_count = 0;
    bool operator==(const device_properties&) const = default;
};

// The allocator's configuration as PyTorch reports it in allocator_settings.
struct allocator_settings {
    std::string conf;             // the PYTORCH_CUDA_ALLOC_CONF string, "" when unset
    int64_t max_split_size = -1;  // bytes; -1 = unlimited
    uint64_t max_non_split_rounding_size = 20ull << 20;
    double garbage_collection_threshold = 0.0;
    bool expandable_segments = false;
    std::vector<uint64_t> roundup_power2_divisions = std::vector<uint64_t>(16, 0);
    // Keys PyTorch reports that memtrail does not interpret, kept as text for the round trip.
    std::map<std::string, std::string> other;
    bool operator==(const allocator_settings&) const = default;
};

// memory_stats() counters of one device, under PyTorch's names.
using statistics = std::map<std::string, int64_t>;

// Which rank of which distributed job wrote the snapshot, as its launcher told the process
// (torchrun, Slurm, MPI). The host is the header's. Unknown fields keep their defaults; a
// snapshot of a process outside any job has none known.
struct job_identity {
    std::string job_id;       // "" when unknown
    int32_t rank = -1;        // global rank; -1 when unknown
    int32_t local_rank = -1;  // rank within the host; -1 when unknown
    int32_t world_size = 0;   // number of ranks; 0 when unknown
    bool known() const { return !job_id.empty() || rank >= 0 || local_rank >= 0 || world_size > 0; }
    bool operator==(const job_identity&) const = default;
};

struct header {
    uint32_t format_version = 1;
    std::string producer;  // e.g. "memtrail 0.1.0" or "torch pickle import"
    std::string host;
    int64_t pid = 0;
    int64_t time_ns = 0;  // when the snapshot was taken
    std::vector<device_properties> devices;
    job_identity job;
    bool operator==(const header&) const = default;
};

class snapshot {
  public:
    snapshot();

    header info;
    allocator_settings settings;
    std::map<int, statistics> stats;  // by device
    std::vector<segment> segments;    // sorted by (device, address)
    std::vector<device_trace> traces;
    std::vector<annotation> annotations;

    // --- interning ---------------------------------------------------------------------------
    string_id intern_string(std::string_view s);
    frame_id intern_frame(const frame& f);
    stack_id intern_stack(const std::vector<frame_id>& frames);  // innermost frame first

    std::string_view string_at(string_id id) const { return strings_[id]; }
    const frame& frame_at(frame_id id) const { return frames_[id]; }
    const std::vector<frame_id>& stack_at(stack_id id) const { return stacks_[id]; }

    const std::vector<std::string>& strings() const { return strings_; }
    const std::vector<frame>& frames() const { return frames_; }
    const std::vector<std::vector<frame_id>>& stacks() const { return stacks_; }

    // The trace of `device`, created empty on first use.
    device_trace& trace_for(int device);
    const device_trace* find_trace(int device) const;

    bool operator==(const snapshot& other) const;

  private:
    struct frame_hash {
        size_t operator()(const frame& f) const;
    };
    struct stack_hash {
        size_t operator()(const std::vector<frame_id>& s) const;
    };
    std::vector<std::string> strings_;
    std::vector<frame> frames_;
    std::vector<std::vector<frame_id>> stacks_;
    std::unordered_map<std::string, string_id> string_index_;
    std::unordered_map<frame, frame_id, frame_hash> frame_index_;
    std::unordered_map<std::vector<frame_id>, stack_id, stack_hash> stack_index_;
};

}  // namespace memtrail::snapshot
