// fork() while recording (issue 31): 19 of 20 children of a recording process hung in
// memtrail_malloc, on locks other threads held at the fork. Threads allocate, free, annotate and
// dump while the main thread forks children that allocate, record and dump in turn; each child
// runs under an alarm, so one that hangs is killed and fails the test instead of hanging it.

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "memtrail/memtrail.h"
#include "memtrail/snapshot/load.hpp"

namespace {

namespace fs = std::filesystem;

constexpr unsigned child_seconds = 10;
constexpr int children = 20;

// What a child does: allocate, free, annotate and dump; its exit status says what failed.
[[noreturn]] void child_work(const fs::path& dump) {
    ::alarm(child_seconds);
    std::vector<void*> blocks;
    for (int i = 0; i < 64; ++i) {
        void* block = memtrail_malloc(512 + i * 4096, 0, nullptr);
        if (block == nullptr) {
            ::_exit(2);
        }
        blocks.push_back(block);
    }
    if (memtrail_marker("child") != 0) {
        ::_exit(3);
    }
    for (void* block : blocks) {
        memtrail_free(block, 0, 0, nullptr);
    }
    ::_exit(memtrail_dump_snapshot(dump.c_str()) == 0 ? 0 : 4);
}

std::string outcome(int status) {
    if (WIFSIGNALED(status)) {
        return WTERMSIG(status) == SIGALRM
                   ? "hung: killed after " + std::to_string(child_seconds) + " s"
                   : "killed by signal " + std::to_string(WTERMSIG(status));
    }
    return "exit " + std::to_string(WEXITSTATUS(status));
}

}  // namespace

TEST(Fork, ChildrenOfARecordingProcessAllocateRecordAndDump) {
#if defined(__SANITIZE_THREAD__)
    // Each child starts threads (its attach endpoint's) after forking a process of many; TSan
    // then fails inside its own runtime ("dup thread with used id"), whatever the child does.
    GTEST_SKIP() << "children of a multi-threaded fork start threads, which TSan cannot follow";
#endif
    ::setenv("MEMTRAIL_DEVICE", "sim:8GiB", 1);
    ASSERT_EQ(memtrail_record_memory_history("all", "all", "native", 20000), 0)
        << memtrail_last_error();
    const fs::path folder = fs::path(::testing::TempDir()) / ("fork-" + std::to_string(::getpid()));
    fs::create_directories(folder);

    std::atomic<bool> stop{false};
    std::vector<std::thread> workers;
    for (int t = 0; t < 4; ++t) {
        workers.emplace_back([&, t] {
            std::vector<void*> held;
            for (uint64_t i = 0; !stop.load(std::memory_order_relaxed); ++i) {
                held.push_back(memtrail_malloc(static_cast<ssize_t>(256 + (i * 7919 + t) % 65536),
                                               0, nullptr));
                if (held.size() > 32) {
                    memtrail_free(held.front(), 0, 0, nullptr);
                    held.erase(held.begin());
                }
                if (i % 64 == 0) {
                    memtrail_marker("worker");
                }
                if (t == 0 && i % 4096 == 0) {
                    memtrail_dump_snapshot((folder / "parent.memtrail").c_str());
                }
            }
            for (void* block : held) {
                memtrail_free(block, 0, 0, nullptr);
            }
        });
    }

    std::vector<std::string> failures;
    for (int c = 0; c < children && failures.empty(); ++c) {
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
        const fs::path dump = folder / ("child-" + std::to_string(c) + ".memtrail");
        const pid_t child = ::fork();
        ASSERT_GE(child, 0);
        if (child == 0) {
            child_work(dump);
        }
        int status = 0;
        ::waitpid(child, &status, 0);
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
            failures.push_back("child " + std::to_string(c) + ": " + outcome(status));
        } else if (memtrail::snapshot::load_snapshot(dump).snapshot->find_trace(0) == nullptr) {
            failures.push_back("child " + std::to_string(c) + ": its dump has no trace");
        }
    }
    stop = true;
    for (auto& worker : workers) {
        worker.join();
    }
    EXPECT_TRUE(failures.empty()) << failures.front();
    fs::remove_all(folder);
}
