// Snapshots written on out-of-memory and on a signal, and the dump path patterns.

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <mutex>
#include <thread>

#include "memtrail/core/simulated_device.hpp"
#include "memtrail/recorder/dump_triggers.hpp"
#include "memtrail/snapshot/msgpack_format.hpp"

namespace {

using namespace memtrail;

TEST(dump_path, expands_placeholders) {
    const std::string pid = std::to_string(getpid());
    EXPECT_EQ(recorder::expand_dump_path("oom-%p-%d-%t.memtrail", 3, 12345),
              "oom-" + pid + "-3-12345.memtrail");
    EXPECT_EQ(recorder::expand_dump_path("100%%-%x-%", 0, 0), "100%-%x-%");
}

// An empty folder of that name under the test's temporary folder.
std::filesystem::path fresh_folder(const char* name) {
    const auto folder = std::filesystem::path(::testing::TempDir()) / name;
    std::filesystem::remove_all(folder);
    std::filesystem::create_directories(folder);
    return folder;
}

simulated_device_options device_of(uint64_t capacity) {
    simulated_device_options options;
    options.capacity = capacity;
    return options;
}

TEST(oom_dump, leaves_a_readable_snapshot) {
    const auto folder = fresh_folder("memtrail_oom");
    simulated_device gpu(device_of(256ull << 20));
    caching_allocator allocator({&gpu});
    recorder::recorder history(allocator);
    history.record_memory_history({});
    recorder::dump_on_out_of_memory(history, (folder / "oom-%d.memtrail").string());

    history.allocate(200ull << 20, 0);
    ::testing::internal::CaptureStderr();
    EXPECT_THROW(history.allocate(200ull << 20, 0), out_of_memory_error);
    const std::string printed = ::testing::internal::GetCapturedStderr();

    const auto path = folder / "oom-0.memtrail";
    ASSERT_TRUE(std::filesystem::exists(path));
    EXPECT_NE(printed.find(path.string()), std::string::npos) << printed;
    const snapshot::snapshot s = snapshot::read_snapshot(path);
    const auto& entries = s.find_trace(0)->entries;
    ASSERT_FALSE(entries.empty());
    bool saw_oom = false;
    for (const auto& entry : entries) {
        saw_oom = saw_oom || entry.kind == snapshot::action::oom;
    }
    EXPECT_TRUE(saw_oom);
    ASSERT_EQ(s.segments.size(), 1u);
    EXPECT_EQ(s.segments[0].total_size, 200ull << 20);
}

TEST(oom_dump, a_failing_dump_does_not_replace_the_out_of_memory_error) {
    simulated_device_options options;
    options.capacity = 64ull << 20;
    simulated_device gpu(options);
    caching_allocator allocator({&gpu});
    recorder::recorder history(allocator);
    recorder::dump_on_out_of_memory(history, "/nonexistent-folder/oom.memtrail");
    ::testing::internal::CaptureStderr();
    EXPECT_THROW(history.allocate(1ull << 30, 0), out_of_memory_error);
    EXPECT_NE(::testing::internal::GetCapturedStderr().find("snapshot failed"), std::string::npos);
}

TEST(oom_dump, writes_at_most_the_limit_and_says_what_it_skipped) {
    const auto folder = fresh_folder("memtrail_oom_limit");
    simulated_device gpu(device_of(64ull << 20));
    caching_allocator allocator({&gpu});
    recorder::recorder history(allocator);
    history.record_memory_history({});
    recorder::dump_on_out_of_memory(history, (folder / "oom-%t.memtrail").string(), 3);

    ::testing::internal::CaptureStderr();
    for (int i = 0; i < 25; ++i) {
        EXPECT_THROW(history.allocate(1ull << 30, 0), out_of_memory_error);
    }
    const std::string printed = ::testing::internal::GetCapturedStderr();
    size_t files = 0;
    for ([[maybe_unused]] const auto& file : std::filesystem::directory_iterator(folder)) {
        ++files;
    }
    EXPECT_EQ(files, 3u);
    EXPECT_NE(printed.find("only the first 3 out-of-memory snapshots are (1 skipped so far)"),
              std::string::npos)
        << printed;
    EXPECT_NE(printed.find("(10 skipped so far)"), std::string::npos) << printed;
    EXPECT_EQ(printed.find("(2 skipped so far)"), std::string::npos) << printed;
}

TEST(signal_dump, runs_the_dump_on_a_helper_thread) {
    std::atomic<int> dumps{0};
    std::atomic<bool> on_other_thread{false};
    const auto main_thread = std::this_thread::get_id();
    {
        recorder::signal_dump trigger(SIGUSR2, [&] {
            on_other_thread = std::this_thread::get_id() != main_thread;
            ++dumps;
        });
        EXPECT_THROW(recorder::signal_dump(SIGUSR1, [] {}), std::logic_error);
        raise(SIGUSR2);
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
        while (dumps.load() == 0 && std::chrono::steady_clock::now() < deadline) {
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
        }
    }
    EXPECT_EQ(dumps.load(), 1);
    EXPECT_TRUE(on_other_thread.load());
    // The previous disposition is back, and a new trigger can be installed.
    recorder::signal_dump again(SIGUSR2, [] {});
}

// A dump that waits, once started, until the test lets it finish.
class held_dump {
  public:
    void operator()() {
        std::unique_lock lock(mutex_);
        ++started_;
        changed_.notify_all();
        changed_.wait(lock, [this] { return released_; });
    }
    // Returns whether `count` dumps have started within 10 s.
    bool wait_for_started(int count) {
        std::unique_lock lock(mutex_);
        return changed_.wait_for(lock, std::chrono::seconds(10), [&] { return started_ >= count; });
    }
    void release() {
        std::lock_guard lock(mutex_);
        released_ = true;
        changed_.notify_all();
    }
    int started() {
        std::lock_guard lock(mutex_);
        return started_;
    }

  private:
    std::mutex mutex_;
    std::condition_variable changed_;
    int started_ = 0;
    bool released_ = false;
};

// Raises SIGUSR2, waits for the dump it starts, then raises it `more` times during that dump.
bool signal_during_a_dump(held_dump& dump, int more) {
    raise(SIGUSR2);
    if (!dump.wait_for_started(1)) {
        return false;
    }
    for (int i = 0; i < more; ++i) {
        raise(SIGUSR2);
    }
    return true;
}

TEST(signal_dump, signals_during_a_dump_are_served_by_one_dump) {
    held_dump dump;
    ::testing::internal::CaptureStderr();
    {
        recorder::signal_dump trigger(SIGUSR2, [&] { dump(); });
        ASSERT_TRUE(signal_during_a_dump(dump, 5));
        dump.release();
        ASSERT_TRUE(dump.wait_for_started(2));
    }
    const std::string printed = ::testing::internal::GetCapturedStderr();
    EXPECT_EQ(dump.started(), 2);
    EXPECT_NE(printed.find("5 dump signals arrived before this dump started; it served them all "
                           "(4 dumps skipped)"),
              std::string::npos)
        << printed;
}

TEST(signal_dump, says_which_signals_no_dump_served_when_removed) {
    held_dump dump;
    std::thread releaser;
    ::testing::internal::CaptureStderr();
    {
        recorder::signal_dump trigger(SIGUSR2, [&] { dump(); });
        ASSERT_TRUE(signal_during_a_dump(dump, 3));
        // The trigger goes while its dump is written; the dump finishes meanwhile.
        releaser = std::thread([&] {
            std::this_thread::sleep_for(std::chrono::milliseconds(300));
            dump.release();
        });
    }
    releaser.join();
    const std::string printed = ::testing::internal::GetCapturedStderr();
    EXPECT_EQ(dump.started(), 1);
    EXPECT_NE(printed.find("3 dump signals arrived during the last dump and were not served"),
              std::string::npos)
        << printed;
}

}  // namespace
