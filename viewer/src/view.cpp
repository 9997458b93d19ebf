// The view's frame: toolbar, keyboard, overview strip and feature tabs, and what the features
// share (the state at the selected moment, stack search, tooltips, the timeline's axis).
//
// Index of this file:
// [SECTION] view kinds
// [SECTION] selection
// [SECTION] frame
// [SECTION] shared caches
// [SECTION] tooltips
// [SECTION] axis

#include "memtrail/viewer/view.hpp"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <future>

#include "detail/format.hpp"
#include "detail/palette.hpp"
#include "detail/text_search.hpp"
#include "detail/view_panels.hpp"
#include "memtrail/analysis/frame_text.hpp"

namespace memtrail::viewer {

//-------------------------------------------------------------------------------------------------
// [SECTION] view kinds
//-------------------------------------------------------------------------------------------------

namespace {

constexpr const char* kind_names[view_kind_count] = {
    "timeline", "segments", "flame", "events", "allocation", "stats", "oom", "compare", "ranks"};
constexpr const char* kind_titles[view_kind_count] = {
    "Timeline", "Segments", "Flame", "Events", "Allocation", "Stats", "OOM", "Compare", "Ranks"};

}  // namespace

std::string_view view_kind_name(view_kind kind) {
    return kind_names[static_cast<int>(kind)];
}

bool parse_view_kind(std::string_view name, view_kind& out) {
    for (int i = 0; i < view_kind_count; ++i) {
        if (name == kind_names[i]) {
            out = static_cast<view_kind>(i);
            return true;
        }
    }
    return false;
}

//-------------------------------------------------------------------------------------------------
// [SECTION] selection
//-------------------------------------------------------------------------------------------------

view::view(std::shared_ptr<const document> doc)
    : doc_(std::move(doc)), panels_(std::make_unique<panels>()) {
    // The peak, not the end: after teardown every legend reads 0 B and the flame graph is empty.
    moment_ = model().peak_position(analysis::series::allocated);
}

view::~view() = default;

void view::show(view_kind kind) {
    kind_ = kind;
    kind_changed_ = true;
}

bool view::select_device(int device) {
    for (size_t i = 0; i < doc_->devices.size(); ++i) {
        if (doc_->devices[i].device == device) {
            if (i != device_index_) {
                device_index_ = i;
                moment_ = model().peak_position(analysis::series::allocated);
                allocation_.reset();
                range_.reset();
                panels_->timeline.view_set = false;
                panels_->flame.zoom = 0;
            }
            return true;
        }
    }
    return false;
}

bool view::select_moment(std::string_view at) {
    // The compare view sets the snapshots side by side at the moment asked for, too.
    if (at == "end") {
        set_moment(model().event_count());
        panels_->compare.at_peak = false;
        return true;
    }
    if (at == "peak") {
        set_moment(model().peak_position(analysis::series::allocated));
        panels_->compare.at_peak = true;
        return true;
    }
    size_t entry = 0;
    const auto [end, error] = std::from_chars(at.data(), at.data() + at.size(), entry);
    if (error != std::errc() || end != at.data() + at.size()) {
        return false;
    }
    set_moment(entry + 1);  // the state at entry k is the one after it is applied
    return true;
}

void view::fit_segment_rows(bool on) {
    panels_->segments.fit_each_row = on;
}

void view::set_comparison(std::shared_ptr<const document> other) {
    compare_doc_ = std::move(other);
    panels_->compare.zoom = 0;
}

void view::compare_range_ends(bool on) {
    panels_->compare.range_ends = on;
    panels_->compare.zoom = 0;
}

bool view::comparing_range_ends() const {
    return panels_->compare.range_ends;
}

void view::set_candidates(std::vector<std::shared_ptr<const document>> documents) {
    candidates_ = std::move(documents);
}

std::shared_ptr<const document> view::take_requested_document() {
    return std::exchange(requested_document_, nullptr);
}

void view::set_moment(size_t position) {
    moment_ = std::min(position, model().event_count());
}

void view::set_allocation(std::optional<size_t> lifetime) {
    allocation_ = lifetime;
}

void view::set_range(std::optional<std::pair<size_t, size_t>> positions) {
    if (positions && positions->first > positions->second) {
        std::swap(positions->first, positions->second);
    }
    // A range drives the flame graph: while one is selected it shows what the range allocated
    // and kept, unless another graph was chosen.
    flame_source& flame = panels_->flame.source;
    if (positions && !range_ && flame == flame_source::moment) {
        flame = flame_source::range_allocated;
    } else if (!positions && range_ && flame == flame_source::range_allocated) {
        flame = flame_source::moment;
    }
    range_ = positions;
}

//-------------------------------------------------------------------------------------------------
// [SECTION] frame
//-------------------------------------------------------------------------------------------------

namespace {

// A result still being computed; a finished one is taken when its tab is next drawn.
template <class T>
bool running(const std::future<T>& job) {
    return job.valid() && job.wait_for(std::chrono::seconds(0)) != std::future_status::ready;
}

}  // namespace

bool view::busy() const {
    return running(panels_->flame.pending) || running(panels_->compare.pending) ||
           running(panels_->timeline.largest_job) || running(panels_->timeline.layers_job) ||
           running(panels_->segments.range_job) ||
           (panels_->oom.remedies && !panels_->oom.remedies->done());
}

void view::handle_keys() {
    const ImGuiIO& io = ImGui::GetIO();
    if (!ImGui::IsWindowFocused(ImGuiFocusedFlags_RootAndChildWindows)) {
        return;
    }
    // The GLFW backend indexes keys by GLFW key code, which is the ASCII code for letters.
    if (io.KeyCtrl && ImGui::IsKeyPressed('F')) {
        focus_search_ = true;
    }
    if (io.WantTextInput) {
        return;
    }
    const size_t step = io.KeyShift ? 100 : 1;
    if (ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_LeftArrow))) {
        set_moment(moment_ > step ? moment_ - step : 0);
    }
    if (ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_RightArrow))) {
        set_moment(moment_ + step);
    }
    if (ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_Home))) {
        set_moment(0);
    }
    if (ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_End))) {
        set_moment(model().event_count());
    }
    if (ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_Escape))) {
        allocation_.reset();
        range_.reset();
        search_[0] = '\0';
    }
}

void view::draw_toolbar() {
    if (doc_->devices.size() > 1) {
        ImGui::SetNextItemWidth(90);
        char current[32];
        std::snprintf(current, sizeof current, "cuda:%d", dev().device);
        if (ImGui::BeginCombo("##device", current)) {
            for (const device_document& d : doc_->devices) {
                char label[32];
                std::snprintf(label, sizeof label, "cuda:%d", d.device);
                if (ImGui::Selectable(label, d.device == dev().device)) {
                    select_device(d.device);
                }
            }
            ImGui::EndCombo();
        }
    } else {
        ImGui::AlignTextToFramePadding();
        ImGui::Text("cuda:%d", dev().device);
    }
    ImGui::SameLine();
    const size_t count = model().event_count();
    if (ImGui::ArrowButton("##previous", ImGuiDir_Left)) {
        set_moment(moment_ > 0 ? moment_ - 1 : 0);
    }
    ImGui::SameLine(0, 2);
    if (ImGui::ArrowButton("##next", ImGuiDir_Right)) {
        set_moment(moment_ + 1);
    }
    ImGui::SameLine();
    ImGui::AlignTextToFramePadding();
    if (moment_ == 0) {
        ImGui::Text("start, before the first of %s entries", format_count(count).c_str());
    } else {
        // Entries are numbered as the CLI numbers them: "entry N" is the state after entry N.
        const snapshot::trace_entry& e = model().entry(moment_ - 1);
        ImGui::Text("%s of %s entries (%s, +%s)", position_label(moment_).c_str(),
                    format_count(count).c_str(), snapshot::action_name(e.kind).data(),
                    format_duration(model().time_at(moment_) - model().time_at(0)).c_str());
    }
    ImGui::SameLine();
    if (ImGui::SmallButton("peak")) {
        set_moment(model().peak_position(analysis::series::allocated));
    }
    ImGui::SameLine();
    if (ImGui::SmallButton("end")) {
        set_moment(count);
    }
    if (range_) {
        ImGui::SameLine();
        ImGui::TextColored(ImVec4(1.0f, 0.92f, 0.35f, 1.0f), "range %s .. %s",
                           position_label(range_->first).c_str(),
                           position_label(range_->second).c_str());
        ImGui::SameLine();
        if (ImGui::SmallButton("x##range")) {
            range_.reset();
        }
    }
    ImGui::SameLine();
    const float search_width = 260;
    ImGui::SetCursorPosX(
        std::max(ImGui::GetCursorPosX(), ImGui::GetWindowContentRegionMax().x - search_width));
    if (focus_search_) {
        ImGui::SetKeyboardFocusHere();
        focus_search_ = false;
    }
    ImGui::SetNextItemWidth(search_width);
    ImGui::InputTextWithHint("##search", "search stacks (Ctrl+F)", search_, sizeof search_);
}

void view::draw() {
    ImGui::PushID(this);
    handle_keys();
    draw_toolbar();
    draw_overview(44);
    if (ImGui::BeginTabBar("##features")) {
        for (int i = 0; i < view_kind_count; ++i) {
            const auto kind = static_cast<view_kind>(i);
            const ImGuiTabItemFlags flags =
                kind_changed_ && kind == kind_ ? ImGuiTabItemFlags_SetSelected : 0;
            if (!ImGui::BeginTabItem(kind_titles[i], nullptr, flags)) {
                continue;
            }
            if (kind == kind_) {
                kind_changed_ = false;
            } else if (!kind_changed_) {
                kind_ = kind;
            }
            ImGui::BeginChild("##feature", ImVec2(0, 0), false,
                              ImGuiWindowFlags_NoScrollbar | ImGuiWindowFlags_NoScrollWithMouse);
            switch (kind) {
                case view_kind::timeline:
                    draw_timeline();
                    break;
                case view_kind::segments:
                    draw_segments();
                    break;
                case view_kind::flame:
                    draw_flame();
                    break;
                case view_kind::events:
                    draw_events();
                    break;
                case view_kind::allocation:
                    draw_allocation();
                    break;
                case view_kind::stats:
                    draw_stats();
                    break;
                case view_kind::oom:
                    draw_oom();
                    break;
                case view_kind::compare:
                    draw_compare();
                    break;
                case view_kind::ranks:
                    draw_ranks();
                    break;
            }
            ImGui::EndChild();
            ImGui::EndTabItem();
        }
        ImGui::EndTabBar();
    }
    ImGui::PopID();
}

//-------------------------------------------------------------------------------------------------
// [SECTION] shared caches
//-------------------------------------------------------------------------------------------------

const analysis::memory_state& view::state_at_moment() {
    state_cache& c = panels_->state;
    if (!c.valid || c.device_index != device_index_ || c.position != moment_) {
        c.state = model().state_after(moment_);
        c.totals = analysis::totals_of(c.state);
        c.device_index = device_index_;
        c.position = moment_;
        c.valid = true;
    }
    return c.state;
}

bool view::stack_matches(snapshot::stack_id stack) {
    if (!searching()) {
        return true;
    }
    search_cache& cache = panels_->search;
    if (cache.text != search_) {
        cache.text = search_;
        cache.stack_match.assign(doc_->source->stacks().size(), -1);
    }
    int8_t& match = cache.stack_match[stack];
    if (match < 0) {
        const std::string needle = lowercase(cache.text);
        match = 0;
        for (const snapshot::frame_id f : doc_->source->stack_at(stack)) {
            if (doc_->frame_search_text[f].find(needle) != std::string::npos) {
                match = 1;
                break;
            }
        }
    }
    return match == 1;
}

//-------------------------------------------------------------------------------------------------
// [SECTION] tooltips
//-------------------------------------------------------------------------------------------------

void view::stack_tooltip(snapshot::stack_id stack, int max_frames) {
    if (stack == snapshot::no_id) {
        ImGui::TextDisabled("%s", analysis::unknown_stack_label);
        return;
    }
    const std::vector<std::string> frames = analysis::stack_labels(*doc_->source, stack);
    // Innermost first: the frame that asked for memory is what a reader looks for.
    int shown = 0;
    for (auto it = frames.rbegin(); it != frames.rend() && shown < max_frames; ++it, ++shown) {
        ImGui::TextUnformatted(it->c_str());
    }
    if (static_cast<int>(frames.size()) > shown) {
        ImGui::TextDisabled("... %d more frames", static_cast<int>(frames.size()) - shown);
    }
}

void view::allocation_tooltip(size_t lifetime) {
    const analysis::allocation_lifetime& life = model().lifetimes()[lifetime];
    ImGui::Text("%s at %s", format_bytes(life.size).c_str(), format_address(life.address).c_str());
    ImGui::TextColored(
        ImGui::ColorConvertU32ToFloat4(palette::text_dim), "requested %s, live from %s to %s",
        format_bytes(life.requested_size).c_str(),
        life.from_before_trace ? "before the trace" : axis_label(axis_of(life.begin)).c_str(),
        life.end >= model().event_count() ? "the end" : axis_label(axis_of(life.end)).c_str());
    if (dev().categories) {
        const analysis::category_assignment& a = dev().categories->assignments()[lifetime];
        ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(palette::text_dim),
                           "%s (confidence %.2f): %s", analysis::category_name(a.category).data(),
                           a.confidence(), analysis::rule_description(a.rule).data());
    }
    ImGui::Separator();
    stack_tooltip(life.stack, 12);
}

//-------------------------------------------------------------------------------------------------
// [SECTION] axis
//-------------------------------------------------------------------------------------------------

double view::axis_of(size_t position) const {
    if (!panels_->timeline.by_time) {
        return static_cast<double>(position);
    }
    return static_cast<double>(model().time_at(position) - model().time_at(0));
}

size_t view::position_of_axis(double axis) const {
    const size_t count = model().event_count();
    if (!panels_->timeline.by_time) {
        // Position p covers [p, p + 1) of the index axis.
        return axis <= 0 ? 0 : std::min(count, static_cast<size_t>(axis));
    }
    return std::min(count,
                    model().position_at_time(model().time_at(0) + static_cast<int64_t>(axis)));
}

double view::axis_end() const {
    if (!panels_->timeline.by_time) {
        return static_cast<double>(model().event_count() + 1);
    }
    return std::max(1.0, axis_of(model().event_count()));
}

std::string view::axis_label(double axis) const {
    if (panels_->timeline.by_time) {
        return "+" + format_duration(static_cast<int64_t>(axis));
    }
    return position_label(static_cast<size_t>(std::max(0.0, axis)));
}

}  // namespace memtrail::viewer
