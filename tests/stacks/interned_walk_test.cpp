// What a kept walk remembers of the stacks with Python frames interned from it: sixteen of them
// (a native stack that many Python lines reach: with four, every capture of twelve lines went to
// the stack table), each found by its Python words for its own table, skip and limit, the oldest
// replaced first, none once the walk changed.

#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <memory>
#include <vector>

#include "detail/eh_frame_unwinder.hpp"

namespace {

using memtrail::recorder::detail::interned_walk;
using memtrail::recorder::detail::python_words_tag;
using memtrail::recorder::detail::remembered_id;

constexpr uint64_t table = 7;
constexpr size_t skip = 3;
constexpr size_t limit = 64;

// Thirty Python frames as (code, location) words: the same code objects, but the caller of the
// innermost frame at line `line`, as the lines of one model that call one PyTorch function.
std::vector<uintptr_t> python_words(uintptr_t line) {
    std::vector<uintptr_t> words;
    for (uintptr_t frame = 0; frame < 30; ++frame) {
        words.push_back(0x7f0000001000 + 0x100 * frame);
        words.push_back(frame == 1 ? line << 1 : (frame + 1) << 1);
    }
    return words;
}

std::unique_ptr<interned_walk> empty_walk() {
    return std::make_unique<interned_walk>(interned_walk{});
}

TEST(interned_walk, sixteen_python_stacks_of_one_walk_are_found_again) {
    const auto walk = empty_walk();
    static_assert(interned_walk::kept_python_stacks >= 16);
    for (uint32_t line = 0; line < 16; ++line) {
        walk->keep_with_python(python_words(100 + line), {table, skip, limit, 1000 + line});
    }
    for (uint32_t line = 0; line < 16; ++line) {
        EXPECT_EQ(walk->find_with_python(python_words(100 + line), table, skip, limit), 1000 + line)
            << line;
    }
    EXPECT_EQ(walk->find_with_python(python_words(99), table, skip, limit), 0u);
}

TEST(interned_walk, a_stack_is_found_only_for_its_table_skip_and_limit) {
    const auto walk = empty_walk();
    const std::vector<uintptr_t> words = python_words(5);
    walk->keep_with_python(words, {table, skip, limit, 11});
    walk->keep_with_python(words, {table, skip + 1, limit, 12});
    EXPECT_EQ(walk->find_with_python(words, table, skip, limit), 11u);
    EXPECT_EQ(walk->find_with_python(words, table, skip + 1, limit), 12u);
    EXPECT_EQ(walk->find_with_python(words, table + 1, skip, limit), 0u);
    EXPECT_EQ(walk->find_with_python(words, table, skip, limit - 1), 0u);
}

TEST(interned_walk, the_oldest_stack_is_replaced_and_a_changed_walk_keeps_none) {
    const auto walk = empty_walk();
    const uint32_t kept = interned_walk::kept_python_stacks;
    for (uint32_t line = 0; line <= kept; ++line) {
        walk->keep_with_python(python_words(line), {table, skip, limit, 1 + line});
    }
    EXPECT_EQ(walk->find_with_python(python_words(0), table, skip, limit), 0u);  // replaced
    EXPECT_EQ(walk->find_with_python(python_words(1), table, skip, limit), 2u);
    EXPECT_EQ(walk->find_with_python(python_words(kept), table, skip, limit), 1 + kept);
    walk->forget();
    for (uint32_t line = 0; line <= kept; ++line) {
        EXPECT_EQ(walk->find_with_python(python_words(line), table, skip, limit), 0u) << line;
    }
}

TEST(interned_walk, words_beyond_what_a_stack_keeps_are_never_kept) {
    const auto walk = empty_walk();
    const std::vector<uintptr_t> long_words(interned_walk::kept_python_words + 2, 0x7f0000002000);
    walk->keep_with_python(long_words, {table, skip, limit, 5});
    EXPECT_EQ(walk->find_with_python(long_words, table, skip, limit), 0u);
    walk->keep_with_python({}, {table, skip, limit, 6});
    EXPECT_EQ(walk->find_with_python({}, table, skip, limit), 0u);
}

TEST(interned_walk, a_tag_is_never_that_of_an_empty_place) {
    // A forgotten walk's tags are 0: a stack whose tag were 0 would find a forgotten one.
    std::array<uintptr_t, 2> words{};
    for (uintptr_t a = 0; a < 20000; ++a) {
        words = {a, a * 0x9e3779b97f4a7c15ull};
        EXPECT_NE(python_words_tag(words), 0u);
    }
}

}  // namespace
