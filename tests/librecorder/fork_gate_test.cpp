// The fork gate (librecorder/src/detail/fork_gate.hpp): fork() waits until no other thread is
// inside memtrail, whether the thread entered through a presence of its own (plain stores,
// ordered by prepare's barrier on every thread) or shares the counter (the threads past the
// 256 presences); a thread's presence goes back when it ends; and a child forked while a thread
// stayed inside past the wait refuses calls.

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <thread>
#include <vector>

#include "detail/fork_gate.hpp"

namespace memtrail::recorder::librecorder {
namespace {

using clock_type = std::chrono::steady_clock;
using namespace std::chrono_literals;

// A thread that enters the gate when told, stays inside until told, then leaves; it lives on
// until destroyed (keeping its presence).
class gate_holder {
  public:
    gate_holder()
        : thread_([this] {
              wait_for(enter_);
              {
                  const fork_gate_scope gate;
                  inside_ = true;
                  wait_for(leave_);
              }
              inside_ = false;
              wait_for(end_);
          }) {}
    ~gate_holder() {
        enter_ = leave_ = end_ = true;
        thread_.join();
        if (releaser_.joinable()) {
            releaser_.join();
        }
    }
    void enter() {
        enter_ = true;
        while (!inside_) {
            std::this_thread::yield();
        }
    }
    void leave() {
        leave_ = true;
        while (inside_) {
            std::this_thread::yield();
        }
    }
    void leave_after(std::chrono::milliseconds delay) {
        releaser_ = std::thread([this, delay] {
            std::this_thread::sleep_for(delay);
            leave_ = true;
        });
    }
    void join_releaser() { releaser_.join(); }

  private:
    static void wait_for(const std::atomic<bool>& flag) {
        while (!flag) {
            std::this_thread::sleep_for(1ms);
        }
    }
    std::atomic<bool> enter_{false};
    std::atomic<bool> leave_{false};
    std::atomic<bool> end_{false};
    std::atomic<bool> inside_{false};
    std::thread thread_;
    std::thread releaser_;
};

// Forks a child that enters the gate and exits with 0, or 1 when the gate refuses it; returns
// how long fork() took in the parent and the child's exit status.
std::pair<clock_type::duration, int> fork_a_child_that_enters() {
    const clock_type::time_point start = clock_type::now();
    const pid_t child = ::fork();
    if (child == 0) {
        try {
            const fork_gate_scope gate;
            ::_exit(0);
        } catch (const forked_child_error&) {
            ::_exit(1);
        }
    }
    const clock_type::duration took = clock_type::now() - start;
    int status = -1;
    ::waitpid(child, &status, 0);
    return {took, WIFEXITED(status) ? WEXITSTATUS(status) : -1};
}

TEST(ForkGate, AForkWaitsForAThreadInsideThroughItsPresence) {
    gate_holder holder;
    holder.enter();
    holder.leave_after(300ms);
    const auto [took, child_status] = fork_a_child_that_enters();
    holder.join_releaser();
    EXPECT_GE(took, 250ms) << "fork() went on while a thread was inside memtrail";
    EXPECT_EQ(child_status, 0);
}

TEST(ForkGate, AForkWaitsForAThreadInsideThatSharesTheCounter) {
    // 256 threads take every presence (entering once), then stay alive outside; the next one
    // inside shares the counter.
    std::vector<std::unique_ptr<gate_holder>> with_presence;
    for (int t = 0; t < 256; ++t) {
        with_presence.push_back(std::make_unique<gate_holder>());
        with_presence.back()->enter();
        with_presence.back()->leave();
    }
    gate_holder sharing;
    sharing.enter();
    sharing.leave_after(300ms);
    const auto [took, child_status] = fork_a_child_that_enters();
    sharing.join_releaser();
    EXPECT_GE(took, 250ms) << "fork() went on while a thread sharing the counter was inside";
    EXPECT_EQ(child_status, 0);
}

TEST(ForkGate, PresencesGoBackWhenThreadsEnd) {
    // Far more threads than presences, one after another: each finds one free, so none pays the
    // shared counter's read-modify-writes.
    for (int t = 0; t < 600; ++t) {
        bool had_its_own = false;
        std::thread([&] {
            const fork_gate_scope gate;
            had_its_own = fork_gate_detail::this_thread_gate.own != nullptr &&
                          !fork_gate_detail::this_thread_gate.inside_shared;
        }).join();
        ASSERT_TRUE(had_its_own) << "thread " << t << " found no presence free";
    }
}

TEST(ForkGate, AChildForkedPastTheWaitRefuses) {
    // prepare waits 2 s for the threads inside, then lets the fork go on: that child may hold
    // locks no thread will release, and refuses every call.
    gate_holder holder;
    holder.enter();
    const auto [took, child_status] = fork_a_child_that_enters();
    holder.leave();
    EXPECT_GE(took, 1900ms);
    EXPECT_EQ(child_status, 1) << "a child forked while a thread stayed inside did not refuse";
    // The parent goes on as before, and so does a child forked now.
    EXPECT_EQ(fork_a_child_that_enters().second, 0);
}

}  // namespace
}  // namespace memtrail::recorder::librecorder
