#pragma once
// The rows of the Ranks view: the open snapshots as the ranks of one distributed job, numbered
// as `memtrail ranks` numbers them (by their paths, else by their order) and listed by rank.

#include <cstddef>
#include <memory>
#include <vector>

#include "memtrail/viewer/document.hpp"

namespace memtrail::viewer {

struct rank_row {
    int rank = 0;
    std::shared_ptr<const document> doc;
    const device_document* device = nullptr;  // doc's main_device(): what the row reports
};

// One row per document, in rank order.
std::vector<rank_row> rank_rows(const std::vector<std::shared_ptr<const document>>& documents);

// Index of the row whose reserved memory peaks highest (the first on a tie); rows not empty.
size_t highest_reserved_peak(const std::vector<rank_row>& rows);

}  // namespace memtrail::viewer
