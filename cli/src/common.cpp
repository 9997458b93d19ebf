#include "detail/common.hpp"

#include <unistd.h>

#include <charconv>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <span>
#include <sstream>

#include "detail/kept_loads.hpp"
#include "detail/progress.hpp"
#include "memtrail/analysis/frame_text.hpp"
#include "memtrail/analysis/size_text.hpp"
#include "memtrail/snapshot/output_file.hpp"

namespace memtrail::cli {

option_spec at_option() {
    return {"--at", "", "EVENT|peak|end",
            "the moment to report: the state after trace entry EVENT, start, end (default), "
            "peak (most allocated) or peak-reserved",
            false};
}

option_spec device_option() {
    return {"--device", "", "N", "the device to report (default: the first one used)", false};
}

option_spec all_frames_option() {
    return {"--all-frames", "", "",
            "show every frame of the stacks (by default the innermost frame of interest and the "
            "user's own, PyTorch's plumbing between them folded into one line)",
            false};
}

option_spec depth_option(size_t default_depth) {
    return {"--depth", "", "D",
            "frames to print per stack, innermost first (default " + std::to_string(default_depth) +
                ")",
            false};
}

size_t depth_of(const parsed_arguments& args, size_t default_depth) {
    const auto depth = args.value("--depth");
    return depth ? parse_count_option("--depth", *depth) : default_depth;
}

analysis::frame_visibility frames_shown(const parsed_arguments& args) {
    return args.has("--all-frames") ? analysis::frame_visibility::all_frames
                                    : analysis::frame_visibility::user_frames;
}

std::string input_name(const std::string& path) {
    return path == standard_stream_path ? "standard input" : path;
}

namespace {

snapshot::loaded_snapshot read_input(const std::string& path) {
    if (path != standard_stream_path) {
        std::error_code ignored;
        const auto size = std::filesystem::file_size(path, ignored);
        const progress_line progress(
            "loading " + path +
            (size == static_cast<uintmax_t>(-1) ? "" : " (" + analysis::format_bytes(size) + ")"));
        return snapshot::load_snapshot(path);
    }
    static bool standard_input_read = false;
    if (standard_input_read) {
        throw usage_error("'-' (standard input) given twice; it can be read only once");
    }
    standard_input_read = true;
    if (::isatty(STDIN_FILENO) != 0) {
        throw usage_error(
            "'-' reads a snapshot from standard input, which is a terminal; pipe or redirect one "
            "into it (memtrail summary - < run.memtrail)");
    }
    const progress_line progress("loading standard input");
    return snapshot::load_snapshot_from_stream(STDIN_FILENO, input_name(path));
}

// `recorded` as `frames` shows it: the view kept, else folded (and kept while loads are).
std::shared_ptr<const snapshot::snapshot> frames_view(
    const std::shared_ptr<const snapshot::snapshot>& recorded, analysis::frame_visibility frames) {
    kept_loads* kept = kept_loads::current();
    if (kept != nullptr) {
        if (auto view = kept->view_of(*recorded, frames)) {
            return view;
        }
    }
    auto view = analysis::with_frame_visibility(recorded, frames);
    if (kept != nullptr) {
        kept->keep_view(recorded, frames, view);
    }
    return view;
}

// The model of `device` over `source`: the one kept, else built (and kept while loads are).
analysis::device_model indexed_model(const std::shared_ptr<const snapshot::snapshot>& source,
                                     int device, const std::string& name) {
    kept_loads* kept = kept_loads::current();
    if (kept != nullptr) {
        if (const analysis::device_model* model = kept->model_of(*source, device)) {
            return *model;
        }
    }
    const progress_line progress("indexing " + name + ", device " + std::to_string(device));
    analysis::device_model model = analysis::device_model::build(source, device);
    if (kept != nullptr) {
        kept->keep_model(model);
    }
    return model;
}

}  // namespace

snapshot::loaded_snapshot load_input(const std::string& path) {
    kept_loads* kept = kept_loads::current();
    if (kept != nullptr) {
        if (const snapshot::loaded_snapshot* loaded = kept->snapshot_at(path)) {
            return *loaded;
        }
    }
    snapshot::loaded_snapshot loaded = read_input(path);
    if (kept != nullptr) {
        kept->keep_snapshot(path, loaded);
    }
    return loaded;
}

void write_output(const std::string& path, output_content content,
                  const std::function<void(std::ostream&)>& write) {
    if (path == standard_stream_path && content == output_content::binary &&
        ::isatty(STDOUT_FILENO) != 0) {
        throw usage_error(
            "-o - would write binary data to a terminal; redirect standard output to a file or "
            "a pipe");
    }
    const progress_line progress(
        "writing " + (path == standard_stream_path ? std::string("standard output") : path));
    // Whole, then written once: a file is replaced only by a complete output (output_file.hpp).
    std::ostringstream text;
    write(text);
    const std::string bytes = std::move(text).str();
    const std::span<const uint8_t> view(reinterpret_cast<const uint8_t*>(bytes.data()),
                                        bytes.size());
    if (path == standard_stream_path) {
        std::cout.flush();
        snapshot::write_to_descriptor(STDOUT_FILENO, "standard output", view);
    } else {
        snapshot::write_output_file(path, view);
    }
}

int chosen_device(const snapshot::snapshot& source, const std::string& path,
                  const parsed_arguments& args) {
    const std::vector<int> devices = analysis::devices_of(source);
    const auto text = args.value("--device");
    if (!text) {
        return devices.empty() ? 0 : devices.front();
    }
    const int device = static_cast<int>(parse_count_option("--device", *text));
    if (std::find(devices.begin(), devices.end(), device) == devices.end() && !devices.empty()) {
        std::string known;
        for (const int d : devices) {
            known += (known.empty() ? "" : ", ") + std::to_string(d);
        }
        throw snapshot::load_error(input_name(path) + ": has no trace or segments for device " +
                                   std::to_string(device) + " (it has: " + known + ")");
    }
    return device;
}

opened_file open_file(const std::string& path, const parsed_arguments& args,
                      analysis::frame_visibility frames) {
    const snapshot::loaded_snapshot loaded = load_input(path);
    const std::shared_ptr<const snapshot::snapshot> shown = frames_view(loaded.snapshot, frames);
    const int device = chosen_device(*shown, path, args);
    return opened_file{input_name(path), loaded.kind,
                       indexed_model(shown, device, input_name(path)), loaded.snapshot};
}

std::vector<opened_file> open_every_device(const std::string& path, const parsed_arguments& args,
                                           analysis::frame_visibility frames) {
    if (args.has("--device")) {
        std::vector<opened_file> one;
        one.push_back(open_file(path, args, frames));
        return one;
    }
    const snapshot::loaded_snapshot loaded = load_input(path);
    const std::shared_ptr<const snapshot::snapshot> shown = frames_view(loaded.snapshot, frames);
    std::vector<int> devices = analysis::devices_of(*shown);
    if (devices.empty()) {
        devices.push_back(0);
    }
    std::vector<opened_file> out;
    for (const int device : devices) {
        out.push_back(opened_file{input_name(path), loaded.kind,
                                  indexed_model(shown, device, input_name(path)), loaded.snapshot});
    }
    return out;
}

analysis::device_model model_with_every_frame(const opened_file& file) {
    return file.recorded.get() == &file.model.source()
               ? file.model
               : indexed_model(file.recorded, file.model.device(), file.path);
}

std::shared_ptr<const analysis::category_map> categories_of(const analysis::device_model& model) {
    kept_loads* kept = kept_loads::current();
    if (kept != nullptr) {
        if (auto categories = kept->categories_of(model)) {
            return categories;
        }
    }
    auto categories =
        std::make_shared<const analysis::category_map>(analysis::category_map::build(model));
    if (kept != nullptr) {
        kept->keep_categories(model, categories);
    }
    return categories;
}

std::string position_label(size_t position) {
    return position == 0 ? "start" : "entry " + std::to_string(position - 1);
}

moment resolve_at(const analysis::device_model& model, const std::optional<std::string>& at,
                  std::string_view option) {
    const size_t count = model.event_count();
    if (!at || *at == "end") {
        return {count, "end"};
    }
    if (*at == "start") {
        return {0, "start"};
    }
    if (*at == "peak") {
        const size_t p = model.peak_position(analysis::series::allocated);
        return {p, "peak allocated (" + position_label(p) + ")"};
    }
    if (*at == "peak-reserved") {
        const size_t p = model.peak_position(analysis::series::reserved);
        return {p, "peak reserved (" + position_label(p) + ")"};
    }
    size_t entry = 0;
    const auto [end, error] = std::from_chars(at->data(), at->data() + at->size(), entry);
    if (error != std::errc() || end != at->data() + at->size()) {
        throw usage_error(std::string(option) + ": '" + *at +
                          "' is not an entry index, start, end, peak or peak-reserved");
    }
    if (entry >= count) {
        throw usage_error(std::string(option) + ": entry " + *at +
                          " is past the trace, which has " + std::to_string(count) + " entries" +
                          (count > 0 ? " (0.." + std::to_string(count - 1) + ")" : ""));
    }
    return {entry + 1, "entry " + *at};
}

std::vector<std::string> stack_lines(const snapshot::snapshot& source, snapshot::stack_id stack,
                                     size_t depth) {
    std::vector<std::string> outer_first = analysis::stack_labels(source, stack);
    std::vector<std::string> lines;
    if (outer_first.empty()) {
        lines.emplace_back(analysis::unknown_stack_label);
        return lines;
    }
    for (auto it = outer_first.rbegin(); it != outer_first.rend() && lines.size() < depth; ++it) {
        lines.push_back(*it);
    }
    if (outer_first.size() > lines.size()) {
        lines.push_back("... " + std::to_string(outer_first.size() - lines.size()) +
                        " more frames");
    }
    return lines;
}

std::string innermost_frame(const snapshot::snapshot& source, snapshot::stack_id stack) {
    const auto& frames = source.stack_at(stack);
    return frames.empty() ? std::string(analysis::unknown_stack_label)
                          : analysis::frame_label(source, frames.front());
}

std::string percent(double fraction) {
    char text[32];
    std::snprintf(text, sizeof text, "%.1f%%", fraction * 100.0);
    return text;
}

std::string hex_address(uint64_t address) {
    char text[24];
    std::snprintf(text, sizeof text, "0x%llx", static_cast<unsigned long long>(address));
    return text;
}

uint64_t peak_bytes(const analysis::device_model& model, analysis::series s) {
    return model.values(s)[model.peak_position(s)];
}

size_t highest_reserved_peak(const std::vector<const analysis::device_model*>& models) {
    size_t best = 0;
    for (size_t i = 1; i < models.size(); ++i) {
        if (peak_bytes(*models[i], analysis::series::reserved) >
            peak_bytes(*models[best], analysis::series::reserved)) {
            best = i;
        }
    }
    return best;
}

std::string file_kind_name(snapshot::file_kind kind) {
    return kind == snapshot::file_kind::torch_pickle ? "PyTorch pickle" : "memtrail snapshot";
}

}  // namespace memtrail::cli
