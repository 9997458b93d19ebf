// The free-block index must walk free blocks in exactly the order of PyTorch's std::set keyed by
// (stream, size, address): every best fit, and every walk of release and garbage collection,
// depends on it. Random inserts and erases, checked against a std::set after every step.

#include "detail/free_block_index.hpp"

#include <gtest/gtest.h>

#include <iterator>
#include <random>
#include <set>
#include <tuple>
#include <vector>

namespace {

using memtrail::detail::free_block_index;
using memtrail::detail::free_entry;
using key = std::tuple<uint64_t, uint64_t, uint64_t>;  // stream, size, address

key key_of(const free_entry& e) {
    return {e.stream, e.size, e.ptr};
}

// Sizes that hit tiny classes, class edges, equal sizes and huge blocks.
uint64_t random_size(std::mt19937_64& rng) {
    switch (rng() % 5) {
        case 0:
            return rng() % 40;
        case 1:
            return uint64_t{1} << (rng() % 63);
        case 2:
            return (uint64_t{1} << (4 + rng() % 40)) - 1;
        case 3:
            return 512 * (1 + rng() % 4);
        default:
            return uint64_t{512} << (rng() % 20) | (rng() % 4096);
    }
}

void expect_same_lower_bound(const free_block_index& index, const std::set<key>& reference,
                             const key& probe) {
    const auto [stream, size, ptr] = probe;
    const auto found = index.lower_bound(free_entry(stream, size, ptr));
    const auto expected = reference.lower_bound(probe);
    if (expected == reference.end()) {
        EXPECT_TRUE(found == index.end());
        return;
    }
    ASSERT_FALSE(found == index.end());
    EXPECT_EQ(key_of(*found), *expected);
    // One step either way lands where the set's iterator lands.
    auto next = found;
    ++next;
    if (std::next(expected) == reference.end()) {
        EXPECT_TRUE(next == index.end());
    } else {
        ASSERT_FALSE(next == index.end());
        EXPECT_EQ(key_of(*next), *std::next(expected));
    }
    if (expected != reference.begin()) {
        auto previous = found;
        --previous;
        EXPECT_EQ(key_of(*previous), *std::prev(expected));
    } else {
        EXPECT_TRUE(found == index.begin());
    }
}

void expect_same_walks(const free_block_index& index, const std::set<key>& reference) {
    std::vector<key> forward;
    for (const free_entry& e : index) {
        forward.push_back(key_of(e));
    }
    EXPECT_EQ(forward, std::vector<key>(reference.begin(), reference.end()));
    std::vector<key> backward;
    for (auto it = index.end(); it != index.begin();) {
        --it;
        backward.push_back(key_of(*it));
    }
    EXPECT_EQ(backward, std::vector<key>(reference.rbegin(), reference.rend()));
}

TEST(FreeBlockIndex, WalksAndSearchesInTheOrderOfPyTorchsSet) {
    std::mt19937_64 rng(17);
    free_block_index index;
    std::set<key> reference;
    std::vector<key> present;
    for (int step = 0; step < 20000; ++step) {
        const uint64_t stream = rng() % 3 * 7;
        const unsigned action = static_cast<unsigned>(rng() % 10);
        if (action < 5 || present.empty()) {
            const key k{stream, random_size(rng), (rng() % 64) * 4096};
            if (reference.insert(k).second) {
                index.insert(free_entry(std::get<0>(k), std::get<1>(k), std::get<2>(k)));
                present.push_back(k);
            }
        } else {
            const size_t victim = rng() % present.size();
            const key k = present[victim];
            present[victim] = present.back();
            present.pop_back();
            reference.erase(k);
            const auto [s, size, ptr] = k;
            if (action < 8) {
                index.erase(s, size, ptr);
            } else {
                const auto it = index.lower_bound(free_entry(s, size, ptr));
                ASSERT_EQ(key_of(*it), k);
                index.erase(it);
            }
        }
        expect_same_lower_bound(index, reference, {stream, random_size(rng), rng() % 65536});
        if (step % 500 == 0) {
            expect_same_walks(index, reference);
        }
        if (::testing::Test::HasFailure()) {
            FAIL() << "at step " << step;
        }
    }
    expect_same_walks(index, reference);
}

TEST(FreeBlockIndex, AnEmptyIndexAndEmptiedStreamsHaveNothingToFind) {
    free_block_index index;
    EXPECT_TRUE(index.begin() == index.end());
    EXPECT_TRUE(index.lower_bound(free_entry(0, 512, 0)) == index.end());
    index.insert(free_entry(5, 1 << 20, 0));
    index.insert(free_entry(9, 512, 4096));
    index.erase(5, 1 << 20, 0);
    // Stream 5's bins stay, empty: a search from it goes on to stream 9.
    const auto found = index.lower_bound(free_entry(5, 0, 0));
    ASSERT_FALSE(found == index.end());
    EXPECT_EQ(found->stream, 9u);
    index.erase(found);
    EXPECT_TRUE(index.begin() == index.end());
}

}  // namespace
