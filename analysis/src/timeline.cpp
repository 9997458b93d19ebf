#include "memtrail/analysis/timeline.hpp"

#include <algorithm>

namespace memtrail::analysis {

std::vector<curve_bucket> buckets_by_position(const device_model& model, series s, size_t first,
                                              size_t last, size_t buckets) {
    last = std::min(last, model.values(s).size());
    std::vector<curve_bucket> out;
    if (first >= last || buckets == 0) {
        return out;
    }
    const size_t length = last - first;
    const size_t count = std::min(buckets, length);
    out.reserve(count);
    for (size_t b = 0; b < count; ++b) {
        const size_t bucket_first = first + length * b / count;
        const size_t bucket_last = first + length * (b + 1) / count;
        const auto [low, high] = model.min_max(s, bucket_first, bucket_last);
        out.push_back(curve_bucket{bucket_first, bucket_last, low, high});
    }
    return out;
}

std::vector<curve_bucket> buckets_by_time(const device_model& model, series s, int64_t first_ns,
                                          int64_t last_ns, size_t buckets) {
    std::vector<curve_bucket> out;
    if (last_ns <= first_ns || buckets == 0) {
        return out;
    }
    out.reserve(buckets);
    const auto span = static_cast<uint64_t>(last_ns - first_ns);
    // first_ns + span * b / buckets without overflowing 64 bits.
    auto boundary = [&](uint64_t b) {
        return first_ns + static_cast<int64_t>(span / buckets * b + span % buckets * b / buckets);
    };
    for (size_t b = 0; b < buckets; ++b) {
        const int64_t start = boundary(b);
        const int64_t stop = boundary(b + 1);
        // The value in effect at `start`, then every value set before `stop`.
        const size_t bucket_first = model.position_at_time(start);
        const size_t bucket_last = std::max(bucket_first + 1, model.position_at_time(stop - 1) + 1);
        const auto [low, high] = model.min_max(s, bucket_first, bucket_last);
        out.push_back(curve_bucket{bucket_first, bucket_last, low, high});
    }
    return out;
}

allocation_timeline largest_allocations(const device_model& model, size_t first, size_t last,
                                        size_t count, size_t buckets, bool include_pending) {
    allocation_timeline timeline;
    const series s = include_pending ? series::active : series::allocated;
    const std::vector<uint64_t>& curve = model.values(s);
    last = std::min(last, curve.size());
    if (first >= last) {
        return timeline;
    }
    const auto& lifetimes = model.lifetimes();
    auto until = [include_pending](const allocation_lifetime& life) {
        return include_pending ? life.released : life.end;
    };
    // Live at position p: begin <= p < until.
    std::vector<size_t> candidates;
    for (size_t i = 0; i < lifetimes.size(); ++i) {
        if (lifetimes[i].begin < last && until(lifetimes[i]) > first) {
            candidates.push_back(i);
        }
    }
    auto larger = [&](size_t a, size_t b) {
        return lifetimes[a].size != lifetimes[b].size ? lifetimes[a].size > lifetimes[b].size
                                                      : a < b;
    };
    const size_t keep = std::min(count, candidates.size());
    std::partial_sort(candidates.begin(), candidates.begin() + static_cast<ptrdiff_t>(keep),
                      candidates.end(), larger);
    candidates.resize(keep);
    timeline.largest = candidates;

    // rest = curve - sum of the largest live, through a difference array over the range.
    std::vector<int64_t> delta(last - first + 1, 0);
    for (const size_t i : timeline.largest) {
        const allocation_lifetime& life = lifetimes[i];
        const auto size = static_cast<int64_t>(life.size);
        delta[std::max(life.begin, first) - first] += size;
        delta[std::min(until(life), last) - first] -= size;
    }
    const size_t length = last - first;
    const size_t bucket_count = std::min(buckets, length);
    timeline.rest.reserve(bucket_count);
    int64_t largest_live = 0;
    size_t position = first;
    for (size_t b = 0; b < bucket_count; ++b) {
        curve_bucket bucket{first + length * b / bucket_count,
                            first + length * (b + 1) / bucket_count, UINT64_MAX, 0};
        for (; position < bucket.last; ++position) {
            largest_live += delta[position - first];
            const int64_t rest = static_cast<int64_t>(curve[position]) - largest_live;
            const uint64_t value = rest > 0 ? static_cast<uint64_t>(rest) : 0;
            bucket.min = std::min(bucket.min, value);
            bucket.max = std::max(bucket.max, value);
        }
        timeline.rest.push_back(bucket);
    }
    return timeline;
}

}  // namespace memtrail::analysis
