// librecorder must not change how the host program's C++ exceptions unwind: it loads libunwind
// for its stacks, and libunwind carries its own _Unwind_RaiseException. This program links
// librecorder.so like any user, records with native stacks, and throws through its own frames,
// some of which call into librecorder on the way.

#include <dlfcn.h>
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <thread>

#include "memtrail/memtrail.h"
#include "memtrail/snapshot/msgpack_format.hpp"
#include "memtrail/snapshot/recorder_frames.hpp"
#include "sanitizer_skips.hpp"

namespace {

struct payload_error : std::runtime_error {
    explicit payload_error(int value)
        : std::runtime_error("payload " + std::to_string(value)), code(value) {}
    int code;
};

std::atomic<int> guards_destroyed{0};

struct unwinding_guard {
    ~unwinding_guard() { ++guards_destroyed; }
};

// Allocates through librecorder in every frame, then throws from the innermost one.
[[gnu::noinline]] void throw_through_frames(int depth, int code) {
    unwinding_guard guard;
    void* block = memtrail_malloc(4096 + depth, 0, nullptr);
    if (block == nullptr) {
        throw std::logic_error(memtrail_last_error());
    }
    memtrail_free(block, 0, 0, nullptr);
    if (depth == 0) {
        throw payload_error(code);
    }
    throw_through_frames(depth - 1, code);
    asm volatile("");
}

[[gnu::noinline]] int catch_and_rethrow_nested(int code) {
    try {
        throw_through_frames(5, code);
    } catch (const payload_error&) {
        std::throw_with_nested(std::runtime_error("outer"));
    }
    return 0;
}

class exceptions_with_librecorder : public ::testing::Test {
  protected:
    static void SetUpTestSuite() {
        setenv("MEMTRAIL_DEVICE", "sim:1GiB", 1);
        ASSERT_EQ(memtrail_record_memory_history("all", "all", "native", 0), 0)
            << memtrail_last_error();
    }
};

TEST_F(exceptions_with_librecorder, unwinders_stay_apart) {
    // The host's unwinder is not libunwind's, and libunwind, although loaded, is not visible.
    Dl_info info{};
    void* raise = dlsym(RTLD_DEFAULT, "_Unwind_RaiseException");
    ASSERT_NE(raise, nullptr);
    ASSERT_NE(dladdr(raise, &info), 0);
    // libgcc_s normally; a sanitizer runtime when it intercepts the call itself.
    EXPECT_EQ(std::string(info.dli_fname).find("libunwind"), std::string::npos) << info.dli_fname;
    EXPECT_EQ(dlsym(RTLD_DEFAULT, "unw_backtrace"), nullptr);
    void* libunwind = dlopen("libunwind.so.8", RTLD_LAZY | RTLD_NOLOAD);
    EXPECT_NE(libunwind, nullptr) << "recording with native stacks loads libunwind";
    if (libunwind != nullptr) {
        dlclose(libunwind);
    }
}

TEST_F(exceptions_with_librecorder, are_caught_with_their_values) {
    guards_destroyed = 0;
    for (int code = 0; code < 200; ++code) {
        try {
            throw_through_frames(code % 12, code);
            FAIL() << "no exception";
        } catch (const payload_error& error) {
            ASSERT_EQ(error.code, code);
            ASSERT_EQ(std::string(error.what()), "payload " + std::to_string(code));
        }
    }
    int expected_guards = 0;
    for (int code = 0; code < 200; ++code) {
        expected_guards += code % 12 + 1;
    }
    EXPECT_EQ(guards_destroyed.load(), expected_guards);
}

TEST_F(exceptions_with_librecorder, nested_and_rethrown_exceptions) {
    MEMTRAIL_SKIP_LIBUNWIND_THREADS_UNDER_TSAN(memtrail::recorder::unwinder::libunwind);
    try {
        catch_and_rethrow_nested(42);
        FAIL() << "no exception";
    } catch (const std::runtime_error& outer) {
        EXPECT_STREQ(outer.what(), "outer");
        try {
            std::rethrow_if_nested(outer);
            FAIL() << "not nested";
        } catch (const payload_error& inner) {
            EXPECT_EQ(inner.code, 42);
        }
    }
    std::exception_ptr captured;
    std::thread worker([&] {
        try {
            throw_through_frames(3, 7);
        } catch (...) {
            captured = std::current_exception();
        }
    });
    worker.join();
    EXPECT_THROW(std::rethrow_exception(captured), payload_error);
}

TEST_F(exceptions_with_librecorder, while_other_threads_record_stacks) {
    MEMTRAIL_SKIP_LIBUNWIND_THREADS_UNDER_TSAN(memtrail::recorder::unwinder::libunwind);
    std::atomic<bool> stop{false};
    std::thread allocating([&] {
        while (!stop.load()) {
            memtrail_free(memtrail_malloc(1 << 16, 0, nullptr), 0, 0, nullptr);
        }
    });
    int caught = 0;
    for (int i = 0; i < 500; ++i) {
        try {
            throw_through_frames(8, i);
        } catch (const payload_error& error) {
            caught += error.code == i ? 1 : 0;
        }
    }
    stop = true;
    allocating.join();
    EXPECT_EQ(caught, 500);
}

TEST_F(exceptions_with_librecorder, recording_still_captures_stacks) {
    try {
        throw_through_frames(2, 1);
    } catch (const payload_error&) {
    }
    const auto path = std::filesystem::path(::testing::TempDir()) / "exceptions.memtrail";
    ASSERT_EQ(memtrail_dump_snapshot(path.c_str()), 0) << memtrail_last_error();
    const auto s = memtrail::snapshot::read_snapshot(path);
    // Each allocation's stack starts in the function that called memtrail_malloc.
    size_t named = 0;
    for (const auto& entry : s.find_trace(0)->entries) {
        if (entry.kind != memtrail::snapshot::action::alloc || entry.stack == 0) {
            continue;
        }
        const auto& top = s.frame_at(s.stack_at(entry.stack).front());
        if (s.string_at(top.function).find("throw_through_frames") != std::string::npos) {
            ++named;
        }
    }
    EXPECT_GE(named, 3u);
    // memtrail's own frames (memtrail_malloc, memtrail:: code in librecorder) are in no stack.
    for (const auto& stack : s.stacks()) {
        for (const auto frame : stack) {
            EXPECT_FALSE(memtrail::snapshot::is_recording_machinery(s, frame))
                << s.string_at(s.frame_at(frame).function);
        }
    }
}

}  // namespace
