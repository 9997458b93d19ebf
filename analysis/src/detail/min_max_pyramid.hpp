#pragma once
// Minimum and maximum of any range of a long series in O(log n): each level keeps the min and
// max of groups of `fan_out` entries of the level below, so a per-pixel timeline over ten
// million positions touches a few hundred values per pixel at most.

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace memtrail::analysis::detail {

class min_max_pyramid {
  public:
    static constexpr size_t fan_out = 16;

    void build(const std::vector<uint64_t>& base);
    // {min, max} over base[first, last); first < last <= base.size().
    std::pair<uint64_t, uint64_t> query(const std::vector<uint64_t>& base, size_t first,
                                        size_t last) const;

  private:
    std::vector<std::vector<uint64_t>> minimums_;  // minimums_[0] groups base directly
    std::vector<std::vector<uint64_t>> maximums_;
};

}  // namespace memtrail::analysis::detail
