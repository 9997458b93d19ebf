#pragma once
// The ordered index of a pool's free blocks: PyTorch's std::set ordered by (stream, size,
// address), whose lower_bound is the best fit, kept as a size-class bitmap over short sorted runs.
// Each stream has 976 size classes (16 per power of two, as TLSF); a class holds its blocks in a
// sorted vector and a two-level bitmap says which classes hold any. A best-fit search is one
// binary search in a run of a few entries plus a bit scan, and insert and erase move a few
// entries of one run: a step touches a handful of cache lines instead of a tree's path.
// The order it walks is exactly the set's, so every decision stays PyTorch's.

#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <memory>
#include <type_traits>
#include <vector>

#include "memtrail/core/device.hpp"

namespace memtrail::detail {

struct block;

// An entry of the free-block index. It carries a copy of the block's sort key so the search
// compares without touching the blocks themselves; a block's key never changes while it is
// in the index. It converts to the block it names.
struct free_entry {
    inline free_entry(block* blk);  // defined after block
    free_entry(stream_handle s, uint64_t bytes, device_address address)
        : stream(s), size(bytes), ptr(address), b(nullptr) {}
    operator block*() const { return b; }
    block* operator->() const { return b; }
    stream_handle stream;
    uint64_t size;
    device_address ptr;
    block* b;
};

// One size class's blocks, sorted by (size, address): a bare array, since it is mostly a few
// entries long and std::vector's general insert and erase cost more than the work they do.
class sorted_run {
  public:
    sorted_run() = default;
    sorted_run(const sorted_run&) = delete;
    sorted_run& operator=(const sorted_run&) = delete;
    ~sorted_run() { ::operator delete[](entries_); }

    uint32_t size() const { return size_; }
    bool empty() const { return size_ == 0; }
    const free_entry& operator[](uint32_t i) const { return entries_[i]; }

    // The position of the first entry not before (size, ptr).
    uint32_t lower_bound(uint64_t size, device_address ptr) const {
        auto before = [&](const free_entry& e) {
            return e.size < size || (e.size == size && e.ptr < ptr);
        };
        uint32_t low = 0;
        uint32_t high = size_;
        // Runs are mostly short: there a linear scan beats a binary search's mispredictions.
        while (high - low > 8) {
            const uint32_t middle = low + (high - low) / 2;
            if (before(entries_[middle])) {
                low = middle + 1;
            } else {
                high = middle;
            }
        }
        while (low < high && before(entries_[low])) {
            ++low;
        }
        return low;
    }
    void insert(uint32_t position, const free_entry& entry) {
        if (size_ == capacity_) [[unlikely]] {
            grow();
        }
        if (position < size_) {
            std::memmove(static_cast<void*>(entries_ + position + 1), entries_ + position,
                         (size_ - position) * sizeof(free_entry));
        }
        entries_[position] = entry;
        ++size_;
    }
    void erase(uint32_t position) {
        --size_;
        if (position < size_) {
            std::memmove(static_cast<void*>(entries_ + position), entries_ + position + 1,
                         (size_ - position) * sizeof(free_entry));
        }
    }

  private:
    [[gnu::noinline]] void grow() {
        capacity_ = capacity_ ? capacity_ * 2 : 4;
        auto* larger = static_cast<free_entry*>(::operator new[](capacity_ * sizeof(free_entry)));
        if (size_ > 0) {
            std::memcpy(static_cast<void*>(larger), entries_, size_ * sizeof(free_entry));
        }
        ::operator delete[](entries_);
        entries_ = larger;
    }
    free_entry* entries_ = nullptr;
    uint32_t size_ = 0;
    uint32_t capacity_ = 0;
};
static_assert(std::is_trivially_copyable_v<free_entry>, "runs move entries with memmove");

class free_block_index {
  public:
    // 16 classes for each power of two from 16 B up; sizes up to 16 share the first.
    static constexpr uint32_t sub_class_bits = 4;
    static constexpr uint32_t class_count = (64 - sub_class_bits) * 16;
    static constexpr uint32_t bitmap_words = (class_count + 63) / 64;

    // Monotonic in the size: every size of a class is smaller than every size of the next.
    // The top five bits of a size of 16 or more, 16 to 31, are its class within its power of
    // two plus 16: no mask, and no branch for the small sizes, which blocks never have.
    static uint32_t size_class(uint64_t size) {
        const uint64_t at_least_16 = size < 16 ? 16 : size;
        const uint32_t shift =
            63u - static_cast<uint32_t>(std::countl_zero(at_least_16)) - sub_class_bits;
        return (shift << sub_class_bits) + static_cast<uint32_t>(at_least_16 >> shift) - 16;
    }

  private:
    struct stream_bins {
        explicit stream_bins(stream_handle s) : stream(s) {}
        stream_handle stream;
        size_t slot = 0;       // its place in streams_
        uint64_t summary = 0;  // bit w: nonempty[w] has a bit set
        std::array<uint64_t, bitmap_words> nonempty{};
        std::array<sorted_run, class_count> runs;

        bool empty() const { return summary == 0; }
        // The first class at or after `from` that holds a block; class_count if none.
        uint32_t next_class(uint32_t from) const {
            if (from >= class_count) {
                return class_count;
            }
            uint32_t word = from >> 6;
            const uint64_t here = nonempty[word] & (~uint64_t{0} << (from & 63));
            if (here) {
                return (word << 6) + static_cast<uint32_t>(std::countr_zero(here));
            }
            const uint64_t later = word + 1 < 64 ? summary & (~uint64_t{0} << (word + 1)) : 0;
            if (!later) {
                return class_count;
            }
            word = static_cast<uint32_t>(std::countr_zero(later));
            return (word << 6) + static_cast<uint32_t>(std::countr_zero(nonempty[word]));
        }
        // The last class before `before` that holds a block; class_count if none.
        uint32_t previous_class(uint32_t before) const {
            if (before == 0) {
                return class_count;
            }
            const uint32_t last = before - 1;
            uint32_t word = last >> 6;
            const uint64_t here = nonempty[word] & (~uint64_t{0} >> (63 - (last & 63)));
            if (here) {
                return (word << 6) + 63u - static_cast<uint32_t>(std::countl_zero(here));
            }
            const uint64_t earlier = summary & ((uint64_t{1} << word) - 1);
            if (!earlier) {
                return class_count;
            }
            word = 63u - static_cast<uint32_t>(std::countl_zero(earlier));
            return (word << 6) + 63u - static_cast<uint32_t>(std::countl_zero(nonempty[word]));
        }
        void mark(uint32_t size_class) {
            nonempty[size_class >> 6] |= uint64_t{1} << (size_class & 63);
            summary |= uint64_t{1} << (size_class >> 6);
        }
        void unmark(uint32_t size_class) {
            uint64_t& word = nonempty[size_class >> 6];
            word &= ~(uint64_t{1} << (size_class & 63));
            if (!word) {
                summary &= ~(uint64_t{1} << (size_class >> 6));
            }
        }
    };
    static_assert(bitmap_words <= 64, "the summary word has one bit per bitmap word");

  public:
    // A position in the index: the stream's bins, a class and a place in its run. Erasing or
    // inserting invalidates positions at or after the changed place in the same run.
    class iterator {
      public:
        using iterator_category = std::bidirectional_iterator_tag;
        using value_type = free_entry;
        using difference_type = std::ptrdiff_t;
        using pointer = const free_entry*;
        using reference = const free_entry&;

        iterator() = default;
        reference operator*() const { return bins_->runs[size_class_][position_]; }
        pointer operator->() const { return &**this; }
        bool operator==(const iterator& other) const {
            return bins_ == other.bins_ && (bins_ == nullptr || (size_class_ == other.size_class_ &&
                                                                 position_ == other.position_));
        }
        iterator& operator++() {
            if (++position_ < bins_->runs[size_class_].size()) {
                return *this;
            }
            position_ = 0;
            size_class_ = bins_->next_class(size_class_ + 1);
            if (size_class_ == class_count) {
                *this = index_->first_from_slot(slot_ + 1);
            }
            return *this;
        }
        iterator& operator--() {
            if (bins_ && position_ > 0) {
                --position_;
                return *this;
            }
            if (bins_) {
                const uint32_t previous = bins_->previous_class(size_class_);
                if (previous != class_count) {
                    size_class_ = previous;
                    position_ = bins_->runs[previous].size() - 1;
                    return *this;
                }
            }
            *this = index_->last_before_slot(bins_ ? slot_ : index_->streams_.size());
            return *this;
        }
        iterator operator++(int) {
            iterator before = *this;
            ++*this;
            return before;
        }
        iterator operator--(int) {
            iterator before = *this;
            --*this;
            return before;
        }

      private:
        friend class free_block_index;
        iterator(const free_block_index* index, stream_bins* bins, size_t slot, uint32_t size_class,
                 uint32_t position)
            : index_(index),
              bins_(bins),
              slot_(slot),
              size_class_(size_class),
              position_(position) {}
        const free_block_index* index_ = nullptr;
        stream_bins* bins_ = nullptr;  // null at the end
        size_t slot_ = 0;
        uint32_t size_class_ = 0;
        uint32_t position_ = 0;
    };
    using const_iterator = iterator;

    free_block_index() = default;
    free_block_index(const free_block_index&) = delete;
    free_block_index& operator=(const free_block_index&) = delete;

    iterator begin() const { return first_from_slot(0); }
    iterator end() const { return iterator(this, nullptr, 0, 0, 0); }

    // The first entry not ordered before `key` by (stream, size, address).
    iterator lower_bound(const free_entry& key) const {
        stream_bins* found = last_used_;
        if (!found || found->stream != key.stream) [[unlikely]] {
            const size_t slot = slot_at_or_after(key.stream);
            if (slot == streams_.size()) {
                return end();
            }
            found = streams_[slot].get();
            if (found->stream != key.stream) {
                return first_from_slot(slot);
            }
            last_used_ = found;
        }
        stream_bins& bins = *found;
        const size_t slot = bins.slot;
        const uint32_t first_class = size_class(key.size);
        const sorted_run& run = bins.runs[first_class];
        if (!run.empty()) {
            const uint32_t position = run.lower_bound(key.size, key.ptr);
            if (position < run.size()) {
                return iterator(this, &bins, slot, first_class, position);
            }
        }
        const uint32_t next = bins.next_class(first_class + 1);
        if (next != class_count) {
            return iterator(this, &bins, slot, next, 0);
        }
        return first_from_slot(slot + 1);
    }

    void insert(const free_entry& entry) {
        stream_bins& bins = bins_for(entry.stream);
        const uint32_t c = size_class(entry.size);
        sorted_run& run = bins.runs[c];
        if (run.empty()) {
            bins.mark(c);
        }
        run.insert(run.lower_bound(entry.size, entry.ptr), entry);
    }

    void erase(iterator it) {
        sorted_run& run = it.bins_->runs[it.size_class_];
        run.erase(it.position_);
        if (run.empty()) {
            it.bins_->unmark(it.size_class_);
        }
    }

    // Erases the entry with this key; the caller knows it is there.
    void erase(stream_handle stream, uint64_t size, device_address ptr) {
        stream_bins& bins = bins_for(stream);
        const uint32_t c = size_class(size);
        sorted_run& run = bins.runs[c];
        run.erase(run.lower_bound(size, ptr));
        if (run.empty()) {
            bins.unmark(c);
        }
    }

  private:
    size_t slot_at_or_after(stream_handle stream) const {
        size_t slot = 0;
        while (slot < streams_.size() && streams_[slot]->stream < stream) {
            ++slot;
        }
        return slot;
    }

    // Most pools serve one stream at a time: the last one used is checked first.
    stream_bins& bins_for(stream_handle stream) {
        if (last_used_ && last_used_->stream == stream) [[likely]] {
            return *last_used_;
        }
        return find_or_add_stream(stream);
    }

    [[gnu::noinline]] stream_bins& find_or_add_stream(stream_handle stream) {
        const size_t slot = slot_at_or_after(stream);
        if (slot == streams_.size() || streams_[slot]->stream != stream) {
            streams_.insert(streams_.begin() + static_cast<std::ptrdiff_t>(slot),
                            std::make_unique<stream_bins>(stream));
            for (size_t i = slot; i < streams_.size(); ++i) {
                streams_[i]->slot = i;
            }
        }
        last_used_ = streams_[slot].get();
        return *last_used_;
    }

    iterator first_from_slot(size_t slot) const {
        for (; slot < streams_.size(); ++slot) {
            stream_bins& bins = *streams_[slot];
            if (!bins.empty()) {
                return iterator(this, &bins, slot, bins.next_class(0), 0);
            }
        }
        return end();
    }

    iterator last_before_slot(size_t slot) const {
        while (slot > 0) {
            stream_bins& bins = *streams_[--slot];
            if (!bins.empty()) {
                const uint32_t c = bins.previous_class(class_count);
                return iterator(this, &bins, slot, c, bins.runs[c].size() - 1);
            }
        }
        return end();
    }

    std::vector<std::unique_ptr<stream_bins>> streams_;  // ordered by stream
    mutable stream_bins* last_used_ = nullptr;
};

}  // namespace memtrail::detail
