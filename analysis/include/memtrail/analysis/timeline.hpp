#pragma once
// Timelines drawn at screen resolution: a curve cut into as many buckets as the view has
// pixels, each with its min and max, and the Active Memory Timeline of PyTorch's memory_viz:
// the largest allocations as bands of their own and everything else summarized as one curve.

#include <cstddef>
#include <cstdint>
#include <vector>

#include "memtrail/analysis/device_model.hpp"

namespace memtrail::analysis {

// Positions [first, last) of a curve and its extremes over them.
struct curve_bucket {
    size_t first = 0;
    size_t last = 0;
    uint64_t min = 0;
    uint64_t max = 0;
};

// Cuts positions [first, last) into at most `buckets` runs of equal length.
std::vector<curve_bucket> buckets_by_position(const device_model& model, series s, size_t first,
                                              size_t last, size_t buckets);

// Cuts the time range [first_ns, last_ns) into `buckets` equal spans. Each bucket covers the
// value in effect when its span starts and every value set during it; a span in which nothing
// happens has first == last - 1 and min == max.
std::vector<curve_bucket> buckets_by_time(const device_model& model, series s, int64_t first_ns,
                                          int64_t last_ns, size_t buckets);

struct allocation_timeline {
    // Indices into model.lifetimes() of the largest allocations live during the range,
    // largest first.
    std::vector<size_t> largest;
    // The chosen series minus the largest allocations, per bucket of positions.
    std::vector<curve_bucket> rest;
};

// The `count` largest allocations live in positions [first, last), and the rest as a curve of
// `buckets` buckets. With `include_pending` an allocation lasts until its free completes and
// the curve is series::active; otherwise until the free request and series::allocated.
allocation_timeline largest_allocations(const device_model& model, size_t first, size_t last,
                                        size_t count, size_t buckets, bool include_pending);

}  // namespace memtrail::analysis
