#pragma once
// One opened snapshot file: the snapshot, a device model per device, and the small indices the
// views look things up in (frame labels for search, OOM entries, annotation ranges, allocations
// by address).

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "memtrail/analysis/categories.hpp"
#include "memtrail/analysis/device_model.hpp"
#include "memtrail/analysis/frame_filter.hpp"
#include "memtrail/analysis/rank_overview.hpp"
#include "memtrail/analysis/stream_names.hpp"
#include "memtrail/snapshot/model.hpp"

namespace memtrail::viewer {

// Where a lane's range comes from: a record_function range, or a run of entries that carry one
// of PyTorch's tags (the user's metadata, torch.compile's region).
enum class range_source : uint8_t { annotation, user_metadata, compile_context };

// A named range of the trace: an annotation's start to its end, in positions.
struct annotation_range {
    snapshot::string_id name = snapshot::no_id;
    size_t first = 0;  // position of the start
    size_t last = 0;   // position of the end (event_count() when it never ended)
    range_source source = range_source::annotation;
};

// What the views need of one device beyond its model.
struct device_document {
    int device = 0;
    analysis::device_model model;
    std::vector<size_t> oom_entries;     // indices of the trace's oom entries
    std::vector<size_t> marker_entries;  // annotation_marker entries
    // Annotation ranges in lanes; a lane's ranges do not overlap and are sorted by position.
    std::vector<std::vector<annotation_range>> annotation_lanes;
    std::vector<uint64_t> streams;        // streams seen in the trace, ascending
    analysis::stream_names stream_names;  // "stream 0" (the default), "stream 1"... by first use
    // Lifetime indices sorted by (address, begin): finds the allocation at an address and moment.
    std::vector<uint32_t> lifetimes_by_address;
    // Peaks and when, the end, and the trace's counts, for the Ranks view.
    analysis::rank_overview overview;
    // What each allocation is for (parameter, activation, ...), for the timeline.
    std::optional<analysis::category_map> categories;

    // The allocation holding `address` at `position` (allocated or pending free), if any.
    std::optional<size_t> allocation_at(uint64_t address, size_t position) const;
    // The allocation an alloc, free_requested or free_completed entry belongs to, if any.
    std::optional<size_t> allocation_of_entry(size_t entry) const;
};

struct document {
    std::string path;
    std::string name;  // the file name, for tab titles
    std::shared_ptr<const snapshot::snapshot> source;
    std::vector<device_document> devices;  // ascending by device
    // What the document reports as one rank: the first device with a trace, else the first.
    const device_document& main_device() const;
    // frame_search_text[f] is analysis::frame_label of frame f, lowercased for search.
    std::vector<std::string> frame_search_text;
    // analysis::stack_fingerprints: the code it ran, to tell which open snapshots are one job's.
    std::vector<uint64_t> stack_fingerprints;
};

// The first picture of a file still loading: its device models (each one's memory curves over
// the trace), ready before the views' indices, the categories and the search text, which take
// as long again on a large trace.
struct load_preview {
    std::string name;                            // the file name
    std::vector<analysis::device_model> models;  // ascending by device
    // The model the document will show first (document::main_device's).
    const analysis::device_model& main_model() const;
};

// How far a load has come, written by the loading thread and read by the UI.
class load_progress {
  public:
    std::atomic<float> fraction{0.0f};
    std::atomic<int> stage{0};  // index into load_stage_names

    // Set before the load starts: the load waits after publishing its preview until release()
    // (memtrail-viewer --screenshot --view loading pictures that moment).
    void hold_at_preview();
    void release();
    // The loading thread hands over its preview (and waits there when held).
    void publish(std::shared_ptr<const load_preview> preview);
    // The preview once published, else nullptr.
    std::shared_ptr<const load_preview> preview() const;

  private:
    mutable std::mutex mutex_;
    std::condition_variable released_;
    std::shared_ptr<const load_preview> preview_;
    bool hold_ = false;
};

inline constexpr const char* load_stage_names[] = {"reading file", "building device models",
                                                   "categories and indices"};

// Reads `path` (a memtrail snapshot, plain or zstd, or a PyTorch pickle) and builds everything
// the views need, with the stacks `frames` says (analysis::with_frame_visibility).
// @throws std::exception with a message for the user when the file cannot be read.
std::shared_ptr<const document> load_document(
    const std::string& path, load_progress& progress,
    analysis::frame_visibility frames = analysis::frame_visibility::user_frames);

// Builds the document of a snapshot already in memory (tests and benchmarks).
std::shared_ptr<const document> make_document(
    std::shared_ptr<const snapshot::snapshot> source, std::string name, load_progress& progress,
    analysis::frame_visibility frames = analysis::frame_visibility::user_frames);

}  // namespace memtrail::viewer
