#include "memtrail/viewer/rank_table.hpp"

#include <algorithm>
#include <optional>
#include <string>

namespace memtrail::viewer {

job_documents documents_of_job(const std::shared_ptr<const document>& shown,
                               const std::vector<std::shared_ptr<const document>>& open) {
    job_documents job;
    for (const auto& doc : open) {
        std::optional<std::string> reason;
        if (doc != shown) {
            reason = analysis::why_not_one_job(*shown->source, *doc->source);
        }
        if (reason) {
            job.others.emplace_back(doc, std::move(*reason));
        } else {
            job.ranks.push_back(doc);
        }
    }
    if (std::find(job.ranks.begin(), job.ranks.end(), shown) == job.ranks.end()) {
        job.ranks.insert(job.ranks.begin(), shown);
    }
    return job;
}

std::vector<rank_row> rank_rows(const std::vector<std::shared_ptr<const document>>& documents) {
    // A document made in memory has no path; its name stands in.
    std::vector<std::string> paths;
    for (const auto& doc : documents) {
        paths.push_back(doc->path.empty() ? doc->name : doc->path);
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
