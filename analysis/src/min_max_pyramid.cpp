#include "detail/min_max_pyramid.hpp"

#include <algorithm>

namespace memtrail::analysis::detail {

void min_max_pyramid::build(const std::vector<uint64_t>& base) {
    minimums_.clear();
    maximums_.clear();
    const std::vector<uint64_t>* low_min = &base;
    const std::vector<uint64_t>* low_max = &base;
    while (low_min->size() > fan_out) {
        const size_t count = (low_min->size() + fan_out - 1) / fan_out;
        std::vector<uint64_t> mins(count);
        std::vector<uint64_t> maxs(count);
        for (size_t group = 0; group < count; ++group) {
            const size_t first = group * fan_out;
            const size_t last = std::min(first + fan_out, low_min->size());
            mins[group] = *std::min_element(low_min->begin() + static_cast<ptrdiff_t>(first),
                                            low_min->begin() + static_cast<ptrdiff_t>(last));
            maxs[group] = *std::max_element(low_max->begin() + static_cast<ptrdiff_t>(first),
                                            low_max->begin() + static_cast<ptrdiff_t>(last));
        }
        minimums_.push_back(std::move(mins));
        maximums_.push_back(std::move(maxs));
        low_min = &minimums_.back();
        low_max = &maximums_.back();
    }
}

std::pair<uint64_t, uint64_t> min_max_pyramid::query(const std::vector<uint64_t>& base,
                                                     size_t first, size_t last) const {
    uint64_t low = UINT64_MAX;
    uint64_t high = 0;
    // Level 0 is the base itself; level l > 0 is minimums_/maximums_[l - 1].
    auto take = [&](size_t level, size_t index) {
        if (level == 0) {
            low = std::min(low, base[index]);
            high = std::max(high, base[index]);
        } else {
            low = std::min(low, minimums_[level - 1][index]);
            high = std::max(high, maximums_[level - 1][index]);
        }
    };
    size_t level = 0;
    while (first < last) {
        if (level < minimums_.size() && last - first >= 2 * fan_out) {
            // Take the unaligned ends here and the aligned middle one level up.
            while (first % fan_out != 0) {
                take(level, first++);
            }
            while (last % fan_out != 0) {
                take(level, --last);
            }
            first /= fan_out;
            last /= fan_out;
            ++level;
        } else {
            while (first < last) {
                take(level, first++);
            }
        }
    }
    return {low, high};
}

}  // namespace memtrail::analysis::detail
