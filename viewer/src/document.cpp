#include "memtrail/viewer/document.hpp"

#include <algorithm>
#include <filesystem>
#include <future>
#include <map>
#include <stdexcept>
#include <tuple>

#include "detail/text_search.hpp"
#include "memtrail/analysis/entry_tags.hpp"
#include "memtrail/analysis/frame_text.hpp"
#include "memtrail/analysis/oom_report.hpp"
#include "memtrail/analysis/rank_jobs.hpp"
#include "memtrail/snapshot/load.hpp"

namespace memtrail::viewer {

namespace {

// Pairs annotation starts with ends of the same name and packs the ranges into lanes where they
// do not overlap (the first lane free at a range's start takes it).
std::vector<std::vector<annotation_range>> annotation_lanes_of(
    const snapshot::snapshot& source, const analysis::device_model& model) {
    struct mark {
        bool is_start;
        snapshot::string_id name;
        size_t position;
    };
    std::vector<mark> marks;
    const size_t count = model.event_count();
    for (size_t i = 0; i < count; ++i) {
        const snapshot::trace_entry& e = model.entry(i);
        if (e.kind == snapshot::action::annotation_start ||
            e.kind == snapshot::action::annotation_end) {
            marks.push_back({e.kind == snapshot::action::annotation_start, e.name, i + 1});
        }
    }
    // A trace with annotation entries of its own has them in external annotations too (the
    // recorder writes both, for PyTorch's tools): take the external ones only when it has none.
    const bool trace_has_annotations = !marks.empty();
    for (const snapshot::annotation& a : source.annotations) {
        if (!trace_has_annotations && a.device == model.device()) {
            marks.push_back({a.is_start, a.name, model.position_at_time(a.time_ns)});
        }
    }
    std::stable_sort(marks.begin(), marks.end(),
                     [](const mark& a, const mark& b) { return a.position < b.position; });

    std::vector<annotation_range> ranges;
    std::map<snapshot::string_id, std::vector<size_t>> open;  // name -> unfinished ranges
    for (const mark& m : marks) {
        if (m.is_start) {
            open[m.name].push_back(ranges.size());
            ranges.push_back({m.name, m.position, count, range_source::annotation});
        } else if (auto it = open.find(m.name); it != open.end() && !it->second.empty()) {
            annotation_range& r = ranges[it->second.back()];
            r.last = m.position;
            it->second.pop_back();
        }
    }
    // PyTorch's tags, each run a range after the annotations: a position is after its entry.
    for (const analysis::tag_range& t : analysis::tag_ranges(model)) {
        ranges.push_back({t.value, t.first + 1, t.last + 1,
                          t.kind == analysis::tag_kind::user_metadata
                              ? range_source::user_metadata
                              : range_source::compile_context});
    }
    std::stable_sort(
        ranges.begin(), ranges.end(),
        [](const annotation_range& a, const annotation_range& b) { return a.first < b.first; });
    std::vector<std::vector<annotation_range>> lanes;
    for (const annotation_range& r : ranges) {
        auto lane = std::find_if(lanes.begin(), lanes.end(),
                                 [&](const auto& l) { return l.back().last <= r.first; });
        if (lane == lanes.end()) {
            lanes.emplace_back();
            lane = lanes.end() - 1;
        }
        lane->push_back(r);
    }
    return lanes;
}

// `recorded` is the snapshot as loaded: the categories read every frame of it (nn.Module._apply,
// the optimizer, autograd), which the folded stacks shown leave out. Its lifetimes are the
// model's, in the same order.
device_document index_device(const snapshot::snapshot& source, analysis::device_model model,
                             const std::shared_ptr<const snapshot::snapshot>& recorded) {
    device_document d{model.device(), std::move(model), {}, {}, {}, {}, {}, {}, {}, {}};
    const analysis::device_model& m = d.model;
    // The categories take longest: they are found on another thread while the indices are built.
    const auto categorize = [&m, &recorded] {
        const bool folded = recorded.get() != &m.source();
        return analysis::category_map::build(
            folded ? analysis::device_model::build(recorded, m.device()) : m);
    };
    std::future<analysis::category_map> categories = std::async(std::launch::async, categorize);
    std::vector<uint64_t> streams;
    for (size_t i = 0; i < m.event_count(); ++i) {
        const snapshot::trace_entry& e = m.entry(i);
        if (e.kind == snapshot::action::annotation_marker) {
            d.marker_entries.push_back(i);
        }
        if (streams.empty() || streams.back() != e.stream) {
            streams.push_back(e.stream);
        }
    }
    std::sort(streams.begin(), streams.end());
    streams.erase(std::unique(streams.begin(), streams.end()), streams.end());
    d.streams = std::move(streams);
    d.stream_names = analysis::stream_names(source, d.device);
    d.oom_entries = analysis::oom_entries(m);
    d.annotation_lanes = annotation_lanes_of(source, m);

    const auto& lifetimes = m.lifetimes();
    d.lifetimes_by_address.resize(lifetimes.size());
    for (size_t i = 0; i < lifetimes.size(); ++i) {
        d.lifetimes_by_address[i] = static_cast<uint32_t>(i);
    }
    std::sort(d.lifetimes_by_address.begin(), d.lifetimes_by_address.end(),
              [&](uint32_t a, uint32_t b) {
                  return std::tie(lifetimes[a].address, lifetimes[a].begin) <
                         std::tie(lifetimes[b].address, lifetimes[b].begin);
              });
    d.overview = analysis::overview_of(m);
    d.categories = categories.get();
    return d;
}

}  // namespace

std::optional<size_t> device_document::allocation_at(uint64_t address, size_t position) const {
    const auto& lifetimes = model.lifetimes();
    // The last allocation at `address` that began at or before `position`.
    auto it = std::upper_bound(lifetimes_by_address.begin(), lifetimes_by_address.end(),
                               std::pair(address, position),
                               [&](const std::pair<uint64_t, size_t>& key, uint32_t i) {
                                   return key < std::pair(lifetimes[i].address, lifetimes[i].begin);
                               });
    if (it == lifetimes_by_address.begin()) {
        return std::nullopt;
    }
    const analysis::allocation_lifetime& life = lifetimes[*(it - 1)];
    if (life.address != address || position >= std::max(life.end, life.released)) {
        return std::nullopt;
    }
    return *(it - 1);
}

std::optional<size_t> device_document::allocation_of_entry(size_t entry) const {
    const snapshot::trace_entry& e = model.entry(entry);
    switch (e.kind) {
        case snapshot::action::alloc:
            return allocation_at(e.address, entry + 1);
        case snapshot::action::free_requested:
        case snapshot::action::free_completed:
            return allocation_at(e.address, entry);
        default:
            return std::nullopt;
    }
}

const device_document& document::main_device() const {
    for (const device_document& d : devices) {
        if (d.model.event_count() > 0) {
            return d;
        }
    }
    return devices.front();
}

const analysis::device_model& load_preview::main_model() const {
    for (const analysis::device_model& m : models) {
        if (m.event_count() > 0) {
            return m;
        }
    }
    return models.front();
}

void load_progress::hold_at_preview() {
    const std::lock_guard lock(mutex_);
    hold_ = true;
}

void load_progress::release() {
    {
        const std::lock_guard lock(mutex_);
        hold_ = false;
    }
    released_.notify_all();
}

void load_progress::publish(std::shared_ptr<const load_preview> preview) {
    std::unique_lock lock(mutex_);
    preview_ = std::move(preview);
    released_.wait(lock, [this] { return !hold_; });
}

std::shared_ptr<const load_preview> load_progress::preview() const {
    const std::lock_guard lock(mutex_);
    return preview_;
}

namespace {

std::shared_ptr<const document> build_document(std::shared_ptr<const snapshot::snapshot> recorded,
                                               analysis::frame_visibility frames, std::string name,
                                               std::string path, load_progress& progress) {
    const std::shared_ptr<const snapshot::snapshot> source =
        analysis::with_frame_visibility(recorded, frames);
    auto doc = std::make_shared<document>();
    doc->name = std::move(name);
    doc->path = std::move(path);
    doc->source = source;
    std::vector<int> devices = analysis::devices_of(*source);
    if (devices.empty()) {
        devices.push_back(0);  // an empty snapshot still gets a (blank) view
    }
    progress.stage = 1;
    auto preview = std::make_shared<load_preview>();
    preview->name = doc->name;
    for (size_t i = 0; i < devices.size(); ++i) {
        preview->models.push_back(analysis::device_model::build(source, devices[i]));
        progress.fraction =
            0.3f + 0.3f * static_cast<float>(i + 1) / static_cast<float>(devices.size());
    }
    // The curves can be drawn now, while the categories and the indices are built.
    progress.stage = 2;
    progress.publish(preview);
    std::future<std::vector<std::string>> search_text = std::async(std::launch::async, [&source] {
        std::vector<std::string> text(source->frames().size());
        for (size_t f = 0; f < text.size(); ++f) {
            text[f] = lowercase(analysis::frame_label(*source, static_cast<snapshot::frame_id>(f)));
        }
        return text;
    });
    std::future<std::vector<uint64_t>> stacks =
        std::async(std::launch::async, [&source] { return analysis::stack_fingerprints(*source); });
    for (size_t i = 0; i < preview->models.size(); ++i) {
        doc->devices.push_back(index_device(*source, preview->models[i], recorded));
        progress.fraction =
            0.6f + 0.4f * static_cast<float>(i + 1) / static_cast<float>(devices.size());
    }
    doc->frame_search_text = search_text.get();
    doc->stack_fingerprints = stacks.get();
    progress.fraction = 1.0f;
    return doc;
}

}  // namespace

std::shared_ptr<const document> make_document(std::shared_ptr<const snapshot::snapshot> source,
                                              std::string name, load_progress& progress,
                                              analysis::frame_visibility frames) {
    return build_document(std::move(source), frames, std::move(name), "", progress);
}

std::shared_ptr<const document> load_document(const std::string& path, load_progress& progress,
                                              analysis::frame_visibility frames) {
    progress.stage = 0;
    progress.fraction = 0.0f;
    snapshot::loaded_snapshot loaded = snapshot::load_snapshot(path);
    progress.fraction = 0.3f;
    return build_document(std::move(loaded.snapshot), frames,
                          std::filesystem::path(path).filename().string(), path, progress);
}

}  // namespace memtrail::viewer
