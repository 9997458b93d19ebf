#pragma once
// A map from addresses to values in address order, for the state engine's live blocks: the
// replay looks a block up, or the blocks around an address, for nearly every entry.
//
// The values sit in short sorted runs of contiguous memory, found by a binary search over a flat
// array of each run's first address. A lookup touches a few cache lines where a balanced tree
// follows a pointer per level, and inserting or erasing moves at most one run's items. Runs split
// when full and merge with a neighbour when small, so the flat array stays short.

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <type_traits>
#include <utility>
#include <vector>

#include "branchless_search.hpp"

namespace memtrail::analysis::detail {

template <class T>
class ordered_address_map {
  public:
    using value_type = std::pair<uint64_t, T>;

  private:
    static constexpr uint32_t run_capacity = 32;
    static constexpr uint32_t run_half = run_capacity / 2;
    // Runs built from a sorted range start part full, so the inserts that follow rarely split.
    static constexpr uint32_t run_initial_fill = run_capacity * 3 / 4;

    struct run {
        uint32_t size = 0;
        std::array<value_type, run_capacity> items{};
    };

  public:
    // Bidirectional; any insert or erase invalidates every iterator.
    template <bool is_const>
    class basic_iterator {
        using map_pointer =
            std::conditional_t<is_const, const ordered_address_map*, ordered_address_map*>;

      public:
        using iterator_category = std::bidirectional_iterator_tag;
        using value_type = ordered_address_map::value_type;
        using difference_type = std::ptrdiff_t;
        using pointer = std::conditional_t<is_const, const value_type*, value_type*>;
        using reference = std::conditional_t<is_const, const value_type&, value_type&>;

        basic_iterator() = default;
        operator basic_iterator<true>() const { return {map_, rank_, slot_}; }

        reference operator*() const { return map_->run_at(rank_).items[slot_]; }
        pointer operator->() const { return &**this; }
        basic_iterator& operator++() {
            if (++slot_ == map_->run_at(rank_).size) {
                ++rank_;
                slot_ = 0;
            }
            return *this;
        }
        basic_iterator& operator--() {
            if (slot_ == 0) {
                --rank_;
                slot_ = map_->run_at(rank_).size;
            }
            --slot_;
            return *this;
        }
        basic_iterator operator++(int) {
            basic_iterator before = *this;
            ++*this;
            return before;
        }
        basic_iterator operator--(int) {
            basic_iterator before = *this;
            --*this;
            return before;
        }
        bool operator==(const basic_iterator& other) const {
            return rank_ == other.rank_ && slot_ == other.slot_;
        }

      private:
        friend class ordered_address_map;
        template <bool>
        friend class basic_iterator;
        basic_iterator(map_pointer map, size_t rank, uint32_t slot)
            : map_(map), rank_(rank), slot_(slot) {}

        map_pointer map_ = nullptr;
        size_t rank_ = 0;  // the run's place in address order; end(): the number of runs
        uint32_t slot_ = 0;
    };
    using iterator = basic_iterator<false>;
    using const_iterator = basic_iterator<true>;

    size_t size() const { return size_; }

    iterator begin() { return {this, 0, 0}; }
    iterator end() { return {this, order_.size(), 0}; }
    const_iterator begin() const { return {this, 0, 0}; }
    const_iterator end() const { return {this, order_.size(), 0}; }

    // The first item at or above `key`.
    iterator lower_bound(uint64_t key) {
        const auto [rank, slot] = locate(key);
        return {this, rank, slot};
    }
    const_iterator lower_bound(uint64_t key) const {
        const auto [rank, slot] = locate(key);
        return {this, rank, slot};
    }
    iterator find(uint64_t key) {
        const iterator it = lower_bound(key);
        return it != end() && it->first == key ? it : end();
    }

    // Inserts `key` (not present) at `position`, which must be lower_bound(key).
    iterator insert(iterator position, uint64_t key, const T& value) {
        size_t rank = position.rank_;
        uint32_t slot = position.slot_;
        if (order_.empty()) {
            order_.push_back(new_run());
            firsts_.push_back(key);
        } else if (slot == 0 && rank > 0) {
            // Append to the run before rather than move the next run's first address.
            --rank;
            slot = run_at(rank).size;
        }
        if (run_at(rank).size == run_capacity) {
            split(rank);
            if (slot > run_half) {
                ++rank;
                slot -= run_half;
            }
        }
        run& r = run_at(rank);
        std::move_backward(r.items.begin() + slot, r.items.begin() + r.size,
                           r.items.begin() + r.size + 1);
        r.items[slot] = value_type(key, value);
        ++r.size;
        ++size_;
        if (slot == 0) {
            firsts_[rank] = key;
        }
        return {this, rank, slot};
    }

    void erase(iterator position) {
        const size_t rank = position.rank_;
        const uint32_t slot = position.slot_;
        run& r = run_at(rank);
        std::move(r.items.begin() + slot + 1, r.items.begin() + r.size, r.items.begin() + slot);
        --r.size;
        --size_;
        if (r.size == 0) {
            remove_run(rank);
            return;
        }
        if (slot == 0) {
            firsts_[rank] = r.items[0].first;
        }
        if (rank + 1 < order_.size() && r.size + run_at(rank + 1).size <= run_half) {
            merge_into_previous(rank + 1);
        } else if (rank > 0 && run_at(rank - 1).size + r.size <= run_half) {
            merge_into_previous(rank);
        }
    }

    // Replaces the contents with `sorted`, a range of value_type ascending by key.
    template <class Range>
    void assign(const Range& sorted) {
        runs_.clear();
        free_runs_.clear();
        order_.clear();
        firsts_.clear();
        size_ = 0;
        for (const auto& [key, value] : sorted) {
            if (order_.empty() || run_at(order_.size() - 1).size == run_initial_fill) {
                order_.push_back(new_run());
                firsts_.push_back(key);
            }
            run& r = run_at(order_.size() - 1);
            r.items[r.size++] = value_type(key, value);
            ++size_;
        }
    }

  private:
    run& run_at(size_t rank) { return runs_[order_[rank]]; }
    const run& run_at(size_t rank) const { return runs_[order_[rank]]; }

    std::pair<size_t, uint32_t> locate(uint64_t key) const {
        size_t rank = partition_point_index(firsts_.data(), firsts_.size(),
                                            [key](uint64_t first) { return first <= key; });
        if (rank == 0) {
            return {0, 0};
        }
        --rank;
        const run& r = run_at(rank);
        const auto slot = static_cast<uint32_t>(partition_point_index(
            r.items.data(), r.size, [key](const value_type& item) { return item.first < key; }));
        return slot == r.size ? std::pair<size_t, uint32_t>{rank + 1, 0}
                              : std::pair<size_t, uint32_t>{rank, slot};
    }

    uint32_t new_run() {
        if (!free_runs_.empty()) {
            const uint32_t id = free_runs_.back();
            free_runs_.pop_back();
            runs_[id].size = 0;
            return id;
        }
        runs_.emplace_back();
        return static_cast<uint32_t>(runs_.size() - 1);
    }

    // Moves the upper half of the full run at `rank` into a new run after it.
    void split(size_t rank) {
        const uint32_t id = new_run();
        run& full = run_at(rank);
        run& upper = runs_[id];
        std::copy(full.items.begin() + run_half, full.items.begin() + full.size,
                  upper.items.begin());
        upper.size = full.size - run_half;
        full.size = run_half;
        order_.insert(order_.begin() + static_cast<std::ptrdiff_t>(rank) + 1, id);
        firsts_.insert(firsts_.begin() + static_cast<std::ptrdiff_t>(rank) + 1,
                       upper.items[0].first);
    }

    void merge_into_previous(size_t rank) {
        run& from = run_at(rank);
        run& into = run_at(rank - 1);
        std::copy(from.items.begin(), from.items.begin() + from.size,
                  into.items.begin() + into.size);
        into.size += from.size;
        remove_run(rank);
    }

    void remove_run(size_t rank) {
        free_runs_.push_back(order_[rank]);
        order_.erase(order_.begin() + static_cast<std::ptrdiff_t>(rank));
        firsts_.erase(firsts_.begin() + static_cast<std::ptrdiff_t>(rank));
    }

    std::vector<run> runs_;            // by id, in any order
    std::vector<uint32_t> free_runs_;  // ids of unused runs
    std::vector<uint32_t> order_;      // run ids in address order
    std::vector<uint64_t> firsts_;     // each run's first key, in address order
    size_t size_ = 0;
};

}  // namespace memtrail::analysis::detail
