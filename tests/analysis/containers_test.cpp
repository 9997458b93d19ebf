// The analysis library's two containers against the standard ones, over long random runs:
// ordered_address_map against std::map (order, lower_bound, insert, erase, iteration both ways,
// assign) and address_hash_map against std::unordered_map.

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <unordered_map>

#include "detail/address_hash_map.hpp"
#include "detail/ordered_address_map.hpp"

namespace memtrail::analysis::detail {
namespace {

template <class Map>
void expect_same(const ordered_address_map<int>& mine, const Map& expected) {
    ASSERT_EQ(mine.size(), expected.size());
    auto it = mine.begin();
    for (const auto& [key, value] : expected) {
        ASSERT_NE(it, mine.end());
        ASSERT_EQ(it->first, key);
        ASSERT_EQ(it->second, value);
        ++it;
    }
    ASSERT_EQ(it, mine.end());
}

TEST(OrderedAddressMap, MatchesStdMapOverRandomOperations) {
    for (uint64_t seed : {1u, 2u, 3u}) {
        std::mt19937_64 rng(seed);
        ordered_address_map<int> mine;
        std::map<uint64_t, int> expected;
        // Keys from a small range so inserts, finds and erases meet often; runs split and merge.
        const uint64_t key_range = seed == 1 ? 64 : 5000;
        for (int step = 0; step < 200000; ++step) {
            const uint64_t key = (rng() % key_range) * 512;
            const int op = static_cast<int>(rng() % 10);
            if (op < 5) {
                auto position = mine.lower_bound(key);
                if (expected.count(key) == 0) {
                    const int value = static_cast<int>(rng() % 1000);
                    mine.insert(position, key, value);
                    expected[key] = value;
                }
            } else if (op < 8) {
                auto found = mine.find(key);
                ASSERT_EQ(found != mine.end(), expected.count(key) == 1) << step;
                if (found != mine.end()) {
                    mine.erase(found);
                    expected.erase(key);
                }
            } else {
                // lower_bound agrees, and stepping back from it agrees too.
                auto mine_it = mine.lower_bound(key);
                auto expected_it = expected.lower_bound(key);
                ASSERT_EQ(mine_it == mine.end(), expected_it == expected.end()) << step;
                if (mine_it != mine.end()) {
                    ASSERT_EQ(mine_it->first, expected_it->first);
                }
                if (mine_it != mine.begin()) {
                    ASSERT_NE(expected_it, expected.begin());
                    ASSERT_EQ(std::prev(mine_it)->first, std::prev(expected_it)->first) << step;
                }
            }
            if (step % 20000 == 0) {
                expect_same(mine, expected);
            }
        }
        expect_same(mine, expected);
        // assign from a sorted range, then keep editing.
        std::vector<std::pair<uint64_t, int>> sorted(expected.begin(), expected.end());
        mine.assign(sorted);
        expect_same(mine, expected);
        for (int i = 0; i < 1000 && !expected.empty(); ++i) {
            const uint64_t key = expected.begin()->first;
            mine.erase(mine.find(key));
            expected.erase(expected.begin());
        }
        expect_same(mine, expected);
    }
}

TEST(AddressHashMap, MatchesStdUnorderedMapOverRandomOperations) {
    std::mt19937_64 rng(7);
    address_hash_map<int> mine;
    std::unordered_map<uint64_t, int> expected;
    for (int step = 0; step < 300000; ++step) {
        const uint64_t key = 0x7f0000000000ull + (rng() % 20000) * 512;
        const int op = static_cast<int>(rng() % 3);
        if (op == 0) {
            const int value = static_cast<int>(rng());
            mine[key] = value;
            expected[key] = value;
        } else if (op == 1) {
            mine.erase(key);
            expected.erase(key);
        } else {
            const int* found = mine.find(key);
            auto it = expected.find(key);
            ASSERT_EQ(found != nullptr, it != expected.end()) << step;
            if (found) {
                ASSERT_EQ(*found, it->second) << step;
            }
        }
        ASSERT_EQ(mine.size(), expected.size()) << step;
    }
    size_t visited = 0;
    mine.for_each([&](uint64_t key, const int& value) {
        ASSERT_EQ(expected.at(key), value);
        ++visited;
    });
    EXPECT_EQ(visited, expected.size());
}

}  // namespace
}  // namespace memtrail::analysis::detail
