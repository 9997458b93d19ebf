#include "memtrail/viewer/rank_table.hpp"

#include <algorithm>
#include <cstddef>
#include <string>

#include "memtrail/analysis/rank_jobs.hpp"

namespace memtrail::viewer {

namespace {

// What the Ranks view numbers and groups a document by: its path, or its name when made in
// memory.
std::string path_of(const document& doc) {
    return doc.path.empty() ? doc.name : doc.path;
}

}  // namespace

job_documents documents_of_job(const std::shared_ptr<const document>& shown,
                               const std::vector<std::shared_ptr<const document>>& open) {
    // The shown document first, so that its job is the first job.
    std::vector<std::shared_ptr<const document>> all = {shown};
    for (const auto& doc : open) {
        if (doc != shown) {
            all.push_back(doc);
        }
    }
    std::vector<analysis::job_file> files;
    for (const auto& doc : all) {
        files.push_back({path_of(*doc), doc->source.get(), &doc->stack_fingerprints});
    }
    const std::vector<size_t> members = analysis::group_into_jobs(files).front().files;
    job_documents job;
    job.ranks.push_back(shown);
    for (size_t i = 1; i < all.size(); ++i) {
        if (std::find(members.begin(), members.end(), i) != members.end()) {
            job.ranks.push_back(all[i]);
        } else {
            // Never null: a file left out of the first job had a reason against its members.
            job.others.emplace_back(all[i],
                                    analysis::why_not_in_job(files, members, i).value_or(""));
        }
    }
    // In opening order (the shown one first when it is not among the open ones).
    const auto opened_at = [&](const std::shared_ptr<const document>& doc) -> std::ptrdiff_t {
        const auto it = std::find(open.begin(), open.end(), doc);
        return it == open.end() ? -1 : it - open.begin();
    };
    std::stable_sort(job.ranks.begin(), job.ranks.end(),
                     [&](const auto& a, const auto& b) { return opened_at(a) < opened_at(b); });
    return job;
}

std::vector<rank_row> rank_rows(const std::vector<std::shared_ptr<const document>>& documents) {
    std::vector<std::string> paths;
    for (const auto& doc : documents) {
        paths.push_back(path_of(*doc));
    }
    const std::vector<int> ranks = analysis::ranks_of_paths(paths);
    std::vector<rank_row> rows;
    for (size_t i = 0; i < documents.size(); ++i) {
        rows.push_back({ranks[i], documents[i], &documents[i]->main_device()});
    }
    std::stable_sort(rows.begin(), rows.end(),
                     [](const rank_row& a, const rank_row& b) { return a.rank < b.rank; });
    return rows;
}

size_t highest_reserved_peak(const std::vector<rank_row>& rows) {
    size_t best = 0;
    for (size_t i = 1; i < rows.size(); ++i) {
        if (rows[i].device->overview.peak_reserved.bytes >
            rows[best].device->overview.peak_reserved.bytes) {
            best = i;
        }
    }
    return best;
}

}  // namespace memtrail::viewer
