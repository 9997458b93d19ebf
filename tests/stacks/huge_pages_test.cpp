// The recorder's memory on huge pages: mappings aligned to a huge page, permanent memory that
// keeps its alignment, and per-thread blocks that come zeroed, are each thread's own, go back
// when their thread exits, and are not handed out again to a thread that has given its back.

#include "memtrail/stacks/huge_pages.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <set>
#include <thread>
#include <vector>

namespace {

using namespace memtrail::recorder::detail;

bool aligned_to(const void* p, size_t alignment) {
    return reinterpret_cast<uintptr_t>(p) % alignment == 0;
}

TEST(huge_pages, a_mapping_is_aligned_to_a_huge_page_and_zeroed) {
    for (const size_t bytes : {size_t{1}, huge_page_bytes, huge_page_bytes + 1}) {
        auto* p = static_cast<unsigned char*>(map_huge_pages(bytes));
        ASSERT_TRUE(aligned_to(p, huge_page_bytes)) << bytes;
        EXPECT_EQ(p[0], 0);
        EXPECT_EQ(p[bytes - 1], 0);
        p[bytes - 1] = 1;  // the whole of it is writable
        unmap_huge_pages(p, bytes);
    }
}

TEST(huge_pages, permanent_memory_keeps_its_alignment_and_never_overlaps) {
    std::vector<std::pair<uintptr_t, size_t>> taken;
    for (size_t i = 0; i < 200; ++i) {
        const size_t bytes = 1000 * (i % 7 + 1) + (i % 2 == 0 ? huge_page_bytes / 3 : 0);
        const size_t alignment = size_t{8} << (i % 4);
        void* p = permanent_huge_page_memory(bytes, alignment);
        ASSERT_TRUE(aligned_to(p, alignment));
        std::memset(p, 0xab, bytes);
        taken.emplace_back(reinterpret_cast<uintptr_t>(p), bytes);
    }
    std::sort(taken.begin(), taken.end());
    for (size_t i = 1; i < taken.size(); ++i) {
        EXPECT_GE(taken[i].first, taken[i - 1].first + taken[i - 1].second) << i;
    }
}

struct counters {
    std::array<uint64_t, 1000> values;
};

TEST(huge_pages, each_thread_has_its_own_zeroed_block_until_it_exits) {
    counters* mine = this_threads_block<counters>();
    ASSERT_NE(mine, nullptr);
    EXPECT_EQ(mine, this_threads_block<counters>());  // the same one each time
    mine->values.fill(7);

    // Threads that exit give their blocks back; later threads get them zeroed.
    std::set<counters*> seen;
    for (int round = 0; round < 20; ++round) {
        std::thread([&seen, mine] {
            counters* block = this_threads_block<counters>();
            ASSERT_NE(block, nullptr);
            ASSERT_NE(block, mine);
            for (const uint64_t value : block->values) {
                ASSERT_EQ(value, 0u);
            }
            block->values.fill(9);
            seen.insert(block);
        }).join();
    }
    EXPECT_EQ(seen.size(), 1u);  // one after the other, they share one block
    for (const uint64_t value : mine->values) {
        ASSERT_EQ(value, 7u);  // never handed to another thread meanwhile
    }

    // Threads alive at once each have their own.
    constexpr int together = 8;
    std::array<counters*, together> blocks{};
    std::vector<std::thread> threads;
    std::atomic<int> started{0};
    for (int t = 0; t < together; ++t) {
        threads.emplace_back([&, t] {
            blocks[t] = this_threads_block<counters>();
            blocks[t]->values.fill(static_cast<uint64_t>(t));
            started.fetch_add(1);
            while (started.load() < together) {
                std::this_thread::yield();
            }
            for (const uint64_t value : blocks[t]->values) {
                ASSERT_EQ(value, static_cast<uint64_t>(t));
            }
        });
    }
    for (std::thread& thread : threads) {
        thread.join();
    }
    EXPECT_EQ(std::set<counters*>(blocks.begin(), blocks.end()).size(), size_t{together});
}

// A thread_local whose destructor runs after the block went back, as a library's cleanup that
// frees a tensor at thread exit would.
struct late_user {
    counters** seen_after_exit;
    ~late_user() { *seen_after_exit = this_threads_block<counters>(); }
};

TEST(huge_pages, a_thread_past_giving_its_block_back_gets_none) {
    counters* after_exit = reinterpret_cast<counters*>(1);
    std::thread([&after_exit] {
        // Constructed before the block's owner, so destroyed after it.
        thread_local late_user user{&after_exit};
        (void)user;
        ASSERT_NE(this_threads_block<counters>(), nullptr);
    }).join();
    EXPECT_EQ(after_exit, nullptr);
}

}  // namespace
