#include "memtrail/viewer/rank_summaries.hpp"

#include <algorithm>
#include <exception>
#include <filesystem>
#include <string_view>

#include "memtrail/analysis/device_model.hpp"
#include "memtrail/analysis/rank_summary_json.hpp"
#include "memtrail/snapshot/load.hpp"

namespace memtrail::viewer {

namespace fs = std::filesystem;

namespace {

bool is_summary_file(const std::string& path) {
    return path.ends_with(analysis::summary_extension);
}

bool is_snapshot_file(const std::string& path) {
    constexpr std::string_view extensions[] = {".pickle", ".pkl", ".memtrail", ".zst"};
    return std::any_of(std::begin(extensions), std::end(extensions),
                       [&](std::string_view extension) { return path.ends_with(extension); });
}

// The summary beside `snapshot` when it can stand for it: there and no older.
bool has_summary_beside(const std::string& snapshot) {
    std::error_code error;
    const auto summary_time =
        fs::last_write_time(snapshot + std::string(analysis::summary_extension), error);
    if (error) {
        return false;
    }
    const auto snapshot_time = fs::last_write_time(snapshot, error);
    return !error && summary_time >= snapshot_time;
}

void search_folder(const std::string& folder, std::vector<std::string>& out) {
    std::vector<std::string> found;
    std::error_code error;
    for (auto it = fs::recursive_directory_iterator(folder, error);
         !error && it != fs::recursive_directory_iterator(); it.increment(error)) {
        if (it->is_regular_file(error)) {
            found.push_back(it->path().string());
        }
    }
    if (error) {
        throw snapshot::load_error(folder + ": cannot be searched: " + error.message());
    }
    std::sort(found.begin(), found.end());
    const size_t before = out.size();
    for (const std::string& path : found) {
        if (is_summary_file(path)) {
            // Beside its snapshot it stands for that snapshot, which is listed (or not) below.
            const std::string snapshot =
                path.substr(0, path.size() - analysis::summary_extension.size());
            if (!std::binary_search(found.begin(), found.end(), snapshot)) {
                out.push_back(path);
            }
        } else if (is_snapshot_file(path)) {
            out.push_back(has_summary_beside(path) ? path + std::string(analysis::summary_extension)
                                                   : path);
        }
    }
    if (out.size() == before) {
        throw snapshot::load_error(folder +
                                   ": holds no snapshots (.pickle, .pkl, .memtrail, .zst) or rank "
                                   "summaries (.summary.json)");
    }
}

// The summary `memtrail summarize` writes for it: its first device with a trace, the stacks
// folded as `top` shows them.
analysis::rank_summary summarize_snapshot(const std::string& path) {
    const snapshot::loaded_snapshot loaded = snapshot::load_snapshot(path);
    const std::vector<int> devices = analysis::devices_of(*loaded.snapshot);
    return analysis::summarize_rank(
        loaded.snapshot, devices.empty() ? 0 : devices.front(), path,
        loaded.kind == snapshot::file_kind::torch_pickle ? "PyTorch pickle" : "memtrail snapshot");
}

std::string title_of(const std::vector<std::string>& paths) {
    return paths.size() == 1 ? paths.front() : std::to_string(paths.size()) + " paths";
}

}  // namespace

bool opens_as_rank_summaries(const std::string& path) {
    std::error_code error;
    return is_summary_file(path) || fs::is_directory(path, error);
}

std::vector<std::string> rank_summary_inputs(const std::vector<std::string>& paths) {
    std::vector<std::string> out;
    for (const std::string& path : paths) {
        std::error_code error;
        if (fs::is_directory(path, error)) {
            search_folder(path, out);
        } else if (fs::exists(path, error)) {
            out.push_back(path);
        } else {
            throw snapshot::load_error(path + ": no such file or folder");
        }
    }
    return out;
}

rank_summary_set merged(const rank_summary_set& a, const rank_summary_set& b) {
    rank_summary_set out = a;
    out.summaries.insert(out.summaries.end(), b.summaries.begin(), b.summaries.end());
    out.files.insert(out.files.end(), b.files.begin(), b.files.end());
    out.errors.insert(out.errors.end(), b.errors.begin(), b.errors.end());
    out.ranking = analysis::analyze_ranks(out.summaries);
    return out;
}

std::string snapshot_of(const rank_summary_set& set, size_t summary) {
    std::error_code error;
    const std::string& recorded = set.summaries[summary].path;
    if (fs::is_regular_file(recorded, error)) {
        return recorded;
    }
    const std::string& file = set.files[summary];
    if (is_summary_file(file)) {
        const std::string beside = file.substr(0, file.size() - analysis::summary_extension.size());
        if (fs::is_regular_file(beside, error)) {
            return beside;
        }
    }
    return "";
}

rank_summaries_job::rank_summaries_job(std::vector<std::string> paths, size_t workers)
    : title_(title_of(paths)) {
    thread_ = std::thread([this, paths = std::move(paths), workers] { run(paths, workers); });
}

rank_summaries_job::~rank_summaries_job() {
    thread_.join();
}

void rank_summaries_job::run(const std::vector<std::string>& paths, size_t workers) {
    try {
        const std::vector<std::string> files = rank_summary_inputs(paths);
        total_ = files.size();
        // Each file's summary or error in its slot, so the set keeps the files' order.
        std::vector<analysis::rank_summary> summaries(files.size());
        std::vector<std::string> errors(files.size());
        std::atomic<size_t> next{0};
        const auto work = [&] {
            for (size_t i = next++; i < files.size(); i = next++) {
                try {
                    summaries[i] = is_summary_file(files[i]) ? analysis::read_summary_file(files[i])
                                                             : summarize_snapshot(files[i]);
                } catch (const std::exception& e) {
                    const std::string what = e.what();
                    errors[i] = what.starts_with(files[i]) ? what : files[i] + ": " + what;
                }
                ++finished_;
            }
        };
        std::vector<std::thread> threads;
        for (size_t t = 1; t < std::min(std::max<size_t>(workers, 1), files.size()); ++t) {
            threads.emplace_back(work);
        }
        work();
        for (std::thread& t : threads) {
            t.join();
        }
        auto set = std::make_shared<rank_summary_set>();
        for (size_t i = 0; i < files.size(); ++i) {
            if (errors[i].empty()) {
                set->summaries.push_back(std::move(summaries[i]));
                set->files.push_back(files[i]);
            } else {
                set->errors.push_back(std::move(errors[i]));
            }
        }
        set->ranking = analysis::analyze_ranks(set->summaries);
        result_ = std::move(set);
    } catch (const std::exception& e) {
        error_ = e.what();
    }
    done_ = true;  // publishes result_ and error_ to the UI thread
}

}  // namespace memtrail::viewer
