#include "detail/rank_inputs.hpp"

#include <algorithm>
#include <atomic>
#include <exception>
#include <filesystem>
#include <thread>

#include "detail/common.hpp"
#include "detail/summary_json.hpp"
#include "memtrail/analysis/rank_jobs.hpp"

namespace memtrail::cli {

namespace fs = std::filesystem;

namespace {

bool ends_with(const std::string& text, std::string_view end) {
    return text.size() >= end.size() &&
           text.compare(text.size() - end.size(), end.size(), end) == 0;
}

bool is_summary_path(const std::string& path) {
    return ends_with(path, summary_extension);
}

bool is_snapshot_path(const std::string& path) {
    for (const std::string_view extension : {".pickle", ".pkl", ".memtrail", ".zst"}) {
        if (ends_with(path, extension)) {
            return true;
        }
    }
    return false;
}

std::string snapshot_of_summary(const std::string& path) {
    return path.substr(0, path.size() - summary_extension.size());
}

// The summary beside `path` when it can stand for it: there, no older, of the device asked.
std::optional<analysis::rank_summary> cached_summary(const std::string& path,
                                                     const parsed_arguments& args) {
    if (path == standard_stream_path) {
        return std::nullopt;
    }
    const std::string beside = path + std::string(summary_extension);
    std::error_code error;
    const auto summary_time = fs::last_write_time(beside, error);
    if (error) {
        return std::nullopt;
    }
    const auto snapshot_time = fs::last_write_time(path, error);
    if (error || summary_time < snapshot_time) {
        return std::nullopt;
    }
    try {
        analysis::rank_summary s = analysis::read_summary_file(beside);
        if (const auto device = args.value("--device");
            (device && std::to_string(s.identity.device) != *device) ||
            s.all_frames != args.has("--all-frames")) {
            return std::nullopt;
        }
        s.path = path;
        return s;
    } catch (const snapshot::load_error&) {
        return std::nullopt;  // damaged or of another version: summarized again
    }
}

}  // namespace

option_spec workers_option() {
    return {"--jobs", "-j", "N",
            "summarize N files at once (default: one per core); each holds one snapshot in memory",
            false};
}

size_t workers_of(const parsed_arguments& args) {
    if (const auto text = args.value("--jobs")) {
        const size_t n = parse_count_option("--jobs", *text);
        if (n == 0) {
            throw usage_error("--jobs: expected at least 1, got 0");
        }
        return n;
    }
    return std::max(1u, std::thread::hardware_concurrency());
}

std::vector<std::string> rank_input_paths(const std::vector<std::string>& arguments) {
    std::vector<std::string> out;
    for (const std::string& argument : arguments) {
        std::error_code error;
        if (argument == standard_stream_path || !fs::is_directory(argument, error)) {
            if (argument != standard_stream_path && !fs::exists(argument, error)) {
                throw snapshot::load_error(argument + ": no such file or folder");
            }
            out.push_back(argument);
            continue;
        }
        std::vector<std::string> found;
        for (auto it = fs::recursive_directory_iterator(
                 argument, fs::directory_options::skip_permission_denied, error);
             !error && it != fs::recursive_directory_iterator(); it.increment(error)) {
            if (!it->is_regular_file(error)) {
                continue;
            }
            const std::string path = it->path().string();
            if (is_summary_path(path) || is_snapshot_path(path)) {
                found.push_back(path);
            }
        }
        if (error) {
            throw snapshot::load_error(argument + ": cannot list: " + error.message());
        }
        std::sort(found.begin(), found.end());
        // A summary beside its snapshot is the snapshot's (summaries_of reads it from there).
        for (const std::string& path : found) {
            if (is_summary_path(path) &&
                std::binary_search(found.begin(), found.end(), snapshot_of_summary(path))) {
                continue;
            }
            out.push_back(path);
        }
        if (found.empty()) {
            throw snapshot::load_error(argument +
                                       ": holds no snapshots (.pickle, .pkl, .memtrail, .zst) "
                                       "or summaries (.summary.json)");
        }
    }
    return out;
}

std::string summary_path_for(const std::string& snapshot_path,
                             const std::optional<std::string>& folder) {
    const std::string name = analysis::file_name_of(snapshot_path) + std::string(summary_extension);
    return folder ? (fs::path(*folder) / name).string()
                  : snapshot_path + std::string(summary_extension);
}

analysis::rank_summary summarize_snapshot(const std::string& path, const parsed_arguments& args) {
    const snapshot::loaded_snapshot loaded =
        path == standard_stream_path ? load_input(path) : snapshot::load_snapshot(path);
    const int device = chosen_device(*loaded.snapshot, path, args);
    return analysis::summarize_rank(loaded.snapshot, device, input_name(path),
                                    file_kind_name(loaded.kind), args.has("--all-frames"));
}

analysis::rank_summary summarize_opened(const opened_file& file, const parsed_arguments& args) {
    const analysis::device_model every_frame = model_with_every_frame(file);
    return analysis::summarize_rank(file.recorded, every_frame, *categories_of(every_frame),
                                    file.path, file_kind_name(file.kind), args.has("--all-frames"));
}

void for_each_summary(const std::vector<std::string>& paths, const parsed_arguments& args,
                      size_t workers, bool reuse,
                      const std::function<void(size_t, analysis::rank_summary&&)>& use) {
    std::vector<std::exception_ptr> errors(paths.size());
    std::vector<size_t> to_compute;
    for (size_t i = 0; i < paths.size(); ++i) {
        if (is_summary_path(paths[i])) {
            use(i, analysis::read_summary_file(paths[i]));
        } else if (auto cached = reuse ? cached_summary(paths[i], args) : std::nullopt) {
            use(i, std::move(*cached));
        } else if (paths[i] == standard_stream_path) {
            use(i, summarize_snapshot(paths[i], args));  // standard input: read here, once
        } else {
            to_compute.push_back(i);
        }
    }
    std::atomic<size_t> next{0};
    const auto work = [&] {
        for (size_t k = next++; k < to_compute.size(); k = next++) {
            const size_t i = to_compute[k];
            try {
                use(i, summarize_snapshot(paths[i], args));
            } catch (...) {
                errors[i] = std::current_exception();
            }
        }
    };
    std::vector<std::thread> threads;
    for (size_t t = 1; t < std::min(workers, to_compute.size()); ++t) {
        threads.emplace_back(work);
    }
    work();
    for (std::thread& t : threads) {
        t.join();
    }
    for (const std::exception_ptr& e : errors) {
        if (e) {
            std::rethrow_exception(e);
        }
    }
}

std::vector<analysis::rank_summary> summaries_of(const std::vector<std::string>& paths,
                                                 const parsed_arguments& args, size_t workers,
                                                 bool reuse) {
    std::vector<analysis::rank_summary> out(paths.size());
    for_each_summary(paths, args, workers, reuse,
                     [&](size_t i, analysis::rank_summary&& s) { out[i] = std::move(s); });
    return out;
}

}  // namespace memtrail::cli
