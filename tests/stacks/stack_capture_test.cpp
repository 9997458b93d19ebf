#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <string>
#include <thread>
#include <vector>

#include "memtrail/stacks/stack_capture.hpp"
#include "memtrail/stacks/symbolizer.hpp"
#include "sanitizer_skips.hpp"

namespace {

using memtrail::recorder::capture_stack;
using memtrail::recorder::prepare_stack_capture;
using memtrail::recorder::symbolizer;
using memtrail::recorder::unwinder;

struct captured {
    std::array<uintptr_t, 64> addresses{};
    size_t count = 0;
};

[[gnu::noinline]] captured capture_here(unwinder method, size_t skip) {
    captured result;
    result.count = capture_stack(method, result.addresses, skip);
    asm volatile("");  // keeps the call above from becoming a tail call
    return result;
}

[[gnu::noinline]] captured nested_inner(unwinder method, size_t skip) {
    captured result = capture_here(method, skip);
    asm volatile("");
    return result;
}

[[gnu::noinline]] captured nested_outer(unwinder method, size_t skip) {
    captured result = nested_inner(method, skip);
    asm volatile("");
    return result;
}

// The outermost function of each return address, innermost stack frame first.
std::vector<std::string> function_names(const captured& stack, size_t count) {
    symbolizer names;
    std::vector<std::string> result;
    for (size_t i = 0; i < std::min(count, stack.count); ++i) {
        result.push_back(names.symbolize(stack.addresses[i]).back().function);
    }
    return result;
}

bool starts_with(const std::string& text, const std::string& prefix) {
    return text.rfind(prefix, 0) == 0;
}

class stack_capture_test : public ::testing::TestWithParam<unwinder> {
  protected:
    void SetUp() override { prepare_stack_capture(GetParam()); }
};

TEST_P(stack_capture_test, first_frame_is_the_caller) {
    const captured stack = nested_outer(GetParam(), 0);
    ASSERT_GE(stack.count, 3u);
    const auto names = function_names(stack, 3);
    EXPECT_TRUE(starts_with(names[0], "(anonymous namespace)::capture_here")) << names[0];
    EXPECT_TRUE(starts_with(names[1], "(anonymous namespace)::nested_inner")) << names[1];
    EXPECT_TRUE(starts_with(names[2], "(anonymous namespace)::nested_outer")) << names[2];
}

TEST_P(stack_capture_test, skip_leaves_out_the_callers_frames) {
    const captured stack = nested_outer(GetParam(), 1);
    ASSERT_GE(stack.count, 2u);
    const auto names = function_names(stack, 2);
    EXPECT_TRUE(starts_with(names[0], "(anonymous namespace)::nested_inner")) << names[0];
    EXPECT_TRUE(starts_with(names[1], "(anonymous namespace)::nested_outer")) << names[1];
}

TEST_P(stack_capture_test, depth_is_bounded_by_the_output) {
    std::array<uintptr_t, 2> two{};
    EXPECT_EQ(capture_stack(GetParam(), two), 2u);
}

[[gnu::noinline]] size_t recurse_and_capture(unwinder method, int depth,
                                             std::vector<uintptr_t>& out) {
    if (depth == 0) {
        return capture_stack(method, out);
    }
    const size_t count = recurse_and_capture(method, depth - 1, out);
    asm volatile("");
    return count;
}

TEST_P(stack_capture_test, deep_recursion_fills_the_buffer) {
    std::vector<uintptr_t> out(memtrail::recorder::max_stack_depth);
    EXPECT_EQ(recurse_and_capture(GetParam(), 400, out), out.size());
}

TEST_P(stack_capture_test, works_from_other_threads) {
    MEMTRAIL_SKIP_LIBUNWIND_THREADS_UNDER_TSAN(GetParam());
    captured stack;
    std::thread worker([&] { stack = nested_outer(GetParam(), 0); });
    worker.join();
    ASSERT_GE(stack.count, 3u);
    const auto names = function_names(stack, 3);
    EXPECT_TRUE(starts_with(names[2], "(anonymous namespace)::nested_outer")) << names[2];
}

INSTANTIATE_TEST_SUITE_P(unwinders, stack_capture_test,
                         ::testing::Values(unwinder::libunwind, unwinder::frame_pointer,
                                           unwinder::eh_frame),
                         [](const ::testing::TestParamInfo<unwinder>& parameter) {
                             return std::string(memtrail::recorder::unwinder_name(parameter.param));
                         });

TEST(unwinder_names, round_trip) {
    for (const unwinder method :
         {unwinder::libunwind, unwinder::frame_pointer, unwinder::eh_frame}) {
        unwinder parsed{};
        ASSERT_TRUE(
            memtrail::recorder::parse_unwinder(memtrail::recorder::unwinder_name(method), parsed));
        EXPECT_EQ(parsed, method);
    }
    unwinder ignored{};
    EXPECT_FALSE(memtrail::recorder::parse_unwinder("dwarf", ignored));
}

}  // namespace
