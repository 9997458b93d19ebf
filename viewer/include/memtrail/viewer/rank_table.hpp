#pragma once
// The rows of the Ranks view: the open snapshots that are ranks of the shown snapshot's job,
// numbered as `memtrail ranks` numbers them (by their paths, else by their order) and listed by
// rank.

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "memtrail/viewer/document.hpp"

namespace memtrail::viewer {

struct rank_row {
    int rank = 0;
    std::shared_ptr<const document> doc;
    const device_document* device = nullptr;  // doc's main_device(): what the row reports
};

// The open documents split by whether they are ranks of `shown`'s job (shown among them,
// always), as analysis::group_into_jobs groups them with `shown` first (names, producer,
// devices, settings, process, times and the code their stacks show); the others with the
// reason.
struct job_documents {
    std::vector<std::shared_ptr<const document>> ranks;  // in opening order
    std::vector<std::pair<std::shared_ptr<const document>, std::string>> others;
};
job_documents documents_of_job(const std::shared_ptr<const document>& shown,
                               const std::vector<std::shared_ptr<const document>>& open);

// One row per document, in rank order.
std::vector<rank_row> rank_rows(const std::vector<std::shared_ptr<const document>>& documents);

// Index of the row whose reserved memory peaks highest (the first on a tie); rows not empty.
size_t highest_reserved_peak(const std::vector<rank_row>& rows);

}  // namespace memtrail::viewer
