#include <gtest/gtest.h>

#include <atomic>
#include <set>
#include <thread>
#include <vector>

#include "memtrail/stacks/stack_table.hpp"

namespace {

using memtrail::recorder::no_stack;
using memtrail::recorder::stack_id;
using memtrail::recorder::stack_table;

std::vector<uintptr_t> make_stack(uintptr_t seed, size_t depth) {
    std::vector<uintptr_t> frames;
    for (size_t i = 0; i < depth; ++i) {
        frames.push_back(0x400000 + seed * 0x1000 + i * 0x10);
    }
    return frames;
}

TEST(stack_table, identical_stacks_share_an_id) {
    stack_table table;
    const auto a = make_stack(1, 10);
    const auto b = make_stack(2, 10);
    const stack_id id_a = table.intern(a);
    const stack_id id_b = table.intern(b);
    EXPECT_NE(id_a, no_stack);
    EXPECT_NE(id_b, no_stack);
    EXPECT_NE(id_a, id_b);
    EXPECT_EQ(table.intern(a), id_a);
    EXPECT_EQ(table.frames_of(id_a), a);
    EXPECT_EQ(table.frames_of(id_b), b);
    EXPECT_EQ(table.size(), 2u);
}

// The recorder keeps a Python stack's code objects alive only once: when it is first added.
TEST(stack_table, intern_says_whether_it_added_the_stack) {
    stack_table table;
    const auto a = make_stack(4, 6);
    bool added = false;
    const stack_id id = table.intern(a, &added);
    EXPECT_TRUE(added);
    EXPECT_EQ(table.intern(a, &added), id);  // found in the thread's recent stacks
    EXPECT_FALSE(added);
    std::thread([&] {
        bool added_elsewhere = true;
        EXPECT_EQ(table.intern(a, &added_elsewhere), id);  // found in the shards
        EXPECT_FALSE(added_elsewhere);
    }).join();
    EXPECT_EQ(table.intern({}, &added), no_stack);
    EXPECT_FALSE(added);
}

TEST(stack_table, prefixes_are_different_stacks) {
    stack_table table;
    const auto full = make_stack(3, 8);
    const std::vector<uintptr_t> prefix(full.begin(), full.begin() + 4);
    EXPECT_NE(table.intern(full), table.intern(prefix));
}

TEST(stack_table, empty_stack_is_no_stack) {
    stack_table table;
    EXPECT_EQ(table.intern({}), no_stack);
    EXPECT_TRUE(table.frames_of(no_stack).empty());
    EXPECT_TRUE(table.frames_of(12345).empty());
}

TEST(stack_table, grows_past_its_first_slots) {
    stack_table table;
    std::vector<stack_id> ids;
    for (uintptr_t i = 0; i < 20000; ++i) {
        ids.push_back(table.intern(make_stack(i, 1 + i % 30)));
    }
    EXPECT_EQ(std::set<stack_id>(ids.begin(), ids.end()).size(), ids.size());
    for (uintptr_t i = 0; i < 20000; ++i) {
        ASSERT_EQ(table.intern(make_stack(i, 1 + i % 30)), ids[i]);
        ASSERT_EQ(table.frames_of(ids[i]), make_stack(i, 1 + i % 30));
    }
    EXPECT_EQ(table.size(), 20000u);
    EXPECT_EQ(table.overflow_count(), 0u);
}

TEST(stack_table, threads_agree_on_ids) {
    stack_table table;
    constexpr int thread_count = 8;
    constexpr uintptr_t stack_count = 5000;
    std::vector<std::vector<stack_id>> seen(thread_count, std::vector<stack_id>(stack_count));
    std::vector<std::thread> threads;
    for (int t = 0; t < thread_count; ++t) {
        threads.emplace_back([&, t] {
            for (uintptr_t i = 0; i < stack_count; ++i) {
                // Every thread walks the same stacks in a different order.
                const uintptr_t which = (i * 7919 + static_cast<uintptr_t>(t) * 131) % stack_count;
                seen[t][which] = table.intern(make_stack(which, 12));
            }
        });
    }
    for (auto& thread : threads) {
        thread.join();
    }
    for (int t = 1; t < thread_count; ++t) {
        EXPECT_EQ(seen[t], seen[0]);
    }
    EXPECT_EQ(table.size(), stack_count);
}

// Finding takes no lock: a stack interned before a find began is found, while another thread
// adds stacks and the shards' tables grow under the finder.
TEST(stack_table, finds_every_stack_added_before_while_another_thread_adds) {
    stack_table table;
    constexpr uintptr_t first = 2000;
    constexpr uintptr_t total = 30000;
    std::vector<stack_id> ids;
    for (uintptr_t i = 0; i < first; ++i) {
        ids.push_back(table.intern(make_stack(i, 8)));
    }
    std::atomic<bool> done{false};
    std::thread adder([&] {
        for (uintptr_t i = first; i < total; ++i) {
            table.intern(make_stack(i, 8));
        }
        done.store(true);
    });
    int rounds = 0;
    do {
        for (uintptr_t i = 0; i < first; ++i) {
            ASSERT_EQ(table.find(make_stack(i, 8)), ids[i]) << "stack " << i;
        }
        ++rounds;
    } while (!done.load());
    adder.join();
    EXPECT_GT(rounds, 0);
    EXPECT_EQ(table.size(), total);
    for (uintptr_t i = 0; i < total; i += 97) {
        const stack_id id = table.find(make_stack(i, 8));
        ASSERT_NE(id, no_stack);
        EXPECT_EQ(table.frames_of(id), make_stack(i, 8));
    }
}

}  // namespace
