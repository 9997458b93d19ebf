#pragma once
// Binary search without data-dependent branches. The replay looks up random addresses, so a
// branching search mispredicts about every other step; here each step is a conditional move.

#include <cstddef>

namespace memtrail::analysis::detail {

// The number of leading items of [first, first + count) for which `below` holds, where `below`
// holds for a prefix (as std::partition_point).
template <class T, class Predicate>
size_t partition_point_index(const T* first, size_t count, Predicate below) {
    if (count == 0) {
        return 0;
    }
    const T* base = first;
    while (count > 1) {
        const size_t half = count / 2;
        base = below(base[half]) ? base + half : base;
        count -= half;
    }
    return static_cast<size_t>(base - first) + (below(*base) ? 1 : 0);
}

}  // namespace memtrail::analysis::detail
