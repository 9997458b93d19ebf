#pragma once
// One rank's snapshot in a few kilobytes, whatever the trace's length: who it is (job, rank,
// host, device, settings), its peaks and when (step, annotation), what its memory is for at the
// peak and at each OOM (the categories `memtrail categories` gives), fragmentation, the OOM
// verdicts, its top folded stacks (as `memtrail top` folds them) under hashes of their text,
// hashes of its sequence of allocations (identical ranks hash equal) and a downsampled memory
// curve. `memtrail summarize` writes it as JSON (docs/ranks.md); `memtrail ranks` compares
// thousands of them (rank_outliers.hpp) without opening a snapshot again.

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "memtrail/analysis/categories.hpp"
#include "memtrail/analysis/rank_overview.hpp"
#include "memtrail/snapshot/model.hpp"

namespace memtrail::analysis {

// The version of the summary's layout; docs/ranks.md describes each.
inline constexpr int rank_summary_version = 1;
inline constexpr size_t summary_curve_points = 200;
inline constexpr size_t summary_top_stacks = 20;
// At most this many sequence chunks: steps are merged, or entries cut, to fit.
inline constexpr size_t summary_sequence_chunks = 256;

using category_bytes = std::array<uint64_t, memory_category_count>;

// Where the identity came from: the snapshot's job identity, else the file's name, else none.
enum class identity_source : uint8_t { snapshot, file_name, none };
std::string_view identity_source_name(identity_source s);
bool parse_identity_source(std::string_view name, identity_source& out);

struct summary_identity {
    std::string job_id;  // "" when unknown
    int rank = -1;       // -1 when unknown
    int local_rank = -1;
    int world_size = 0;  // 0 when unknown
    identity_source source = identity_source::none;
    std::string host;
    int64_t pid = 0;
    std::string producer;
    int device = 0;
    std::string device_name;  // "" when the snapshot does not say (a pickle)
    uint64_t device_memory = 0;
    std::string allocator_conf;  // PYTORCH_CUDA_ALLOC_CONF as recorded
    uint64_t settings_hash = 0;  // of every allocator setting: equal settings hash equal
    std::vector<std::pair<std::string, uint64_t>> device_kinds;  // every device listed, sorted
    int64_t first_time_ns = 0;  // the first timed entry, else the snapshot's time; 0: none
    int64_t last_time_ns = 0;   // when it was taken, or the last timed entry
};

struct summary_peak {
    uint64_t bytes = 0;
    size_t position = 0;  // entries applied (position p is "entry p - 1")
    int64_t time_ns = 0;
    size_t step = 0;         // training step holding it (0 when the trace has none)
    std::string annotation;  // innermost annotation open there, "" when none
};

struct summary_stack {
    uint64_t hash = 0;  // FNV-1a of stack_text (folded frames' text): equal across files
    uint64_t bytes = 0;
    size_t blocks = 0;
    memory_category category = memory_category::unknown;  // where most of its bytes are
    std::vector<std::string> frames;                      // labels, innermost first
};

struct summary_oom {
    size_t entry = 0;
    int64_t time_ns = 0;
    uint64_t requested = 0;
    std::string verdict;  // verdict_key, and " (secondary: KEY)" where one held too
    std::string explanation;
    std::optional<uint64_t> outside_allocator;  // bytes held outside this allocator
    category_bytes categories{};                // allocated at the OOM, by category
};

// The trace cut into at most summary_sequence_chunks stretches (its training steps, or equal
// runs of entries without them), each with the hash of its actions and sizes.
struct sequence_chunk {
    size_t first_entry = 0;
    size_t first_step = 0;
    uint64_t hash = 0;
};

struct curve_point {
    size_t position = 0;     // the bucket's first position
    uint64_t allocated = 0;  // the most over the bucket
    uint64_t reserved = 0;
};

struct rank_summary {
    int version = rank_summary_version;
    std::string path;       // as given to summarize
    std::string file_kind;  // "memtrail" or "torch-pickle"
    summary_identity identity;
    size_t entries = 0;
    uint64_t dropped = 0;
    summary_peak peak_allocated;
    summary_peak peak_reserved;
    uint64_t end_allocated = 0;
    uint64_t end_reserved = 0;
    int64_t allocations = 0;
    int64_t device_allocations = 0;
    int64_t oom_count = 0;
    std::string job_kind;     // job_kind_name
    std::string step_source;  // step_source_name
    size_t steps = 1;
    category_bytes categories_at_peak{};  // at peak allocated
    // At peak reserved: free bytes inside segments, the largest free block, 1 - largest / free.
    uint64_t free_at_peak_reserved = 0;
    uint64_t largest_free_at_peak_reserved = 0;
    double fragmentation_at_peak_reserved = 0.0;
    std::vector<summary_oom> ooms;
    std::optional<uint64_t> outside_allocator;  // the most seen outside at an OOM, where known
    bool all_frames = false;  // top_stacks keep every frame (--all-frames), else folded as top's
    std::vector<summary_stack> top_stacks;  // at peak allocated, most bytes first
    uint64_t unstacked_at_peak = 0;         // blocks without a stack there
    std::vector<uint64_t> stack_sketch;     // the smallest stack_fingerprints: which code it ran
    uint64_t sequence_hash = 0;
    std::vector<sequence_chunk> sequence;
    std::vector<curve_point> curve;
};

// Adds `rank`'s peaks, end and counts to `totals`, as add_to adds a rank_overview's.
void add_to(rank_totals& totals, const rank_summary& rank);

// FNV-1a over `text`: the stable hash of stack texts and sequences.
uint64_t fnv1a(std::string_view text, uint64_t seed = 0xcbf29ce484222325ull);

// Summarizes device `device` of `source` (every frame kept: the categories read frames the
// folding leaves out). `path` names it and gives the rank when the snapshot has no job identity.
// One model is built over the trace; the hashes and the curve are one pass over it. The top
// stacks are folded as `top` shows them, or keep every frame with `all_frames`.
rank_summary summarize_rank(std::shared_ptr<const snapshot::snapshot> source, int device,
                            const std::string& path, std::string file_kind,
                            bool all_frames = false);
// The same from `model`, a model of one device built over `source` as summarize_rank would
// build it, and its `categories` (category_map::build(model)), for a caller that holds them
// already (`memtrail report`, which indexes a file once). Throws std::invalid_argument when
// `model` is not built over `source`.
rank_summary summarize_rank(std::shared_ptr<const snapshot::snapshot> source,
                            const device_model& model, const category_map& categories,
                            const std::string& path, std::string file_kind,
                            bool all_frames = false);

}  // namespace memtrail::analysis
