#include <gtest/gtest.h>
#include <unistd.h>

#include <array>
#include <cmath>
#include <filesystem>
#include <string>

#include "memtrail/stacks/stack_capture.hpp"
#include "memtrail/stacks/symbolizer.hpp"

namespace {

using memtrail::recorder::capture_stack;
using memtrail::recorder::native_frame;
using memtrail::recorder::symbolizer;
using memtrail::recorder::unwinder;

uint32_t capture_line = 0;
uint32_t inlined_call_line = 0;

[[gnu::noinline]] uintptr_t return_address_here() {
    memtrail::recorder::prepare_stack_capture(unwinder::libunwind);
    std::array<uintptr_t, 1> top{};
    capture_line = __LINE__ + 1;
    capture_stack(unwinder::libunwind, top);
    asm volatile("");
    return top[0];
}

[[gnu::always_inline]] inline uintptr_t inlined_helper() {
    std::array<uintptr_t, 1> top{};
    capture_line = __LINE__ + 1;
    capture_stack(unwinder::libunwind, top);
    return top[0];
}

[[gnu::noinline]] uintptr_t calls_an_inlined_helper() {
    memtrail::recorder::prepare_stack_capture(unwinder::libunwind);
    inlined_call_line = __LINE__ + 1;
    const uintptr_t address = inlined_helper();
    asm volatile("");
    return address;
}

std::string file_name(const std::string& path) {
    return std::filesystem::path(path).filename().string();
}

std::string this_executable() {
    return std::filesystem::read_symlink("/proc/self/exe").string();
}

TEST(symbolizer, names_function_file_and_line) {
    const uintptr_t address = return_address_here();
    symbolizer names;
    const auto frames = names.symbolize(address);
    ASSERT_EQ(frames.size(), 1u);
    const native_frame& frame = frames[0];
    EXPECT_EQ(frame.function, "(anonymous namespace)::return_address_here()");
    EXPECT_EQ(file_name(frame.filename), "symbolizer_test.cpp");
    EXPECT_EQ(frame.line, capture_line);
    EXPECT_EQ(frame.module, this_executable());
    EXPECT_FALSE(frame.build_id.empty());
    EXPECT_NE(frame.module_offset, address);
}

TEST(symbolizer, expands_inlined_calls) {
    const uintptr_t address = calls_an_inlined_helper();
    symbolizer names;
    const auto frames = names.symbolize(address);
    ASSERT_EQ(frames.size(), 2u);
    // Internal linkage: DWARF has no mangled name, so no parameter list either.
    EXPECT_EQ(frames[0].function, "(anonymous namespace)::inlined_helper");
    EXPECT_EQ(file_name(frames[0].filename), "symbolizer_test.cpp");
    EXPECT_EQ(frames[0].line, capture_line);
    EXPECT_EQ(frames[1].function, "(anonymous namespace)::calls_an_inlined_helper()");
    EXPECT_EQ(frames[1].line, inlined_call_line);
    EXPECT_EQ(frames[0].module_offset, frames[1].module_offset);
}

TEST(symbolizer, names_functions_in_shared_libraries) {
    // One byte into a libm function: the symbolizer looks one byte before a return address.
    auto* function = reinterpret_cast<double (*)(double)>(&::cbrt);
    const auto address = reinterpret_cast<uintptr_t>(function) + 1;
    symbolizer names;
    const auto frames = names.symbolize(address);
    ASSERT_FALSE(frames.empty());
    EXPECT_NE(frames.back().module.find("libm"), std::string::npos) << frames.back().module;
    EXPECT_NE(frames.back().function.find("cbrt"), std::string::npos) << frames.back().function;
}

TEST(symbolizer, unknown_addresses_keep_their_value) {
    symbolizer names;
    const auto frames = names.symbolize(0x10);
    ASSERT_EQ(frames.size(), 1u);
    EXPECT_TRUE(frames[0].module.empty());
    EXPECT_TRUE(frames[0].function.empty());
    EXPECT_EQ(frames[0].module_offset, 0x10u);
}

}  // namespace
