#pragma once
// The allocator's size rules under one snapshot's settings: the analysis infers block sizes from
// a trace with them.

#include <algorithm>
#include <array>
#include <cstdint>

#include "memtrail/rules/size_rules.hpp"
#include "memtrail/snapshot/model.hpp"

namespace memtrail::analysis::detail {

class allocator_rules {
  public:
    allocator_rules() = default;
    explicit allocator_rules(const snapshot::allocator_settings& settings)
        : max_split_size_(size_rules::max_split_size_from_statistic(settings.max_split_size)) {
        const size_t count =
            std::min(settings.roundup_power2_divisions.size(), divisions_per_interval_.size());
        std::copy_n(settings.roundup_power2_divisions.begin(), count,
                    divisions_per_interval_.begin());
    }

    uint64_t round_size(uint64_t request) const {
        return size_rules::round_size(request, divisions_per_interval_);
    }
    bool should_split(bool is_small_pool, bool is_expandable, uint64_t size,
                      uint64_t remaining) const {
        return size_rules::should_split(is_small_pool, is_expandable, size, remaining,
                                        max_split_size_);
    }
    bool is_oversize(uint64_t size) const { return size_rules::is_oversize(size, max_split_size_); }
    int64_t max_split_size_statistic() const {
        return size_rules::max_split_size_statistic(max_split_size_);
    }

  private:
    uint64_t max_split_size_ = size_rules::unlimited;
    std::array<uint64_t, size_rules::roundup_interval_count> divisions_per_interval_{};
};

}  // namespace memtrail::analysis::detail
