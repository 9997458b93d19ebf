#pragma once
// Snapshots written when something happens rather than when asked: on out-of-memory, and when
// the process receives a signal (to look at a long run while it runs).

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "memtrail/recorder/recorder.hpp"

namespace memtrail::recorder {

// A dump path from a pattern: %p the pid, %d the device (-1 when not about one device), %t the
// time in ns since the epoch, %% a percent sign.
std::string expand_dump_path(std::string_view pattern, int device, int64_t time_ns);

// How many snapshots dump_on_out_of_memory writes at most: a program that retries failing
// allocations in a loop would otherwise fill the disk with one file per attempt.
inline constexpr size_t default_max_oom_dumps = 16;

// After each out-of-memory on any device of `history`'s allocator, up to `max_dumps` in all,
// writes a snapshot to expand_dump_path(pattern, device, now) and prints the path to stderr;
// later ones are counted and said to be skipped (at the 1st, 10th, 100th... skipped). It runs
// outside the allocator's lock, before the allocation fails; a failure to write is reported on
// stderr and never thrown into the failing allocation. `history` must outlive its allocator's
// use.
void dump_on_out_of_memory(recorder& history, std::string pattern,
                           size_t max_dumps = default_max_oom_dumps);
// The same with the pattern asked for at each out-of-memory ("" writes nothing and counts
// nothing), for a pattern that changes while the program runs; `written`, when given, is told
// the path of each snapshot written.
void dump_on_out_of_memory(recorder& history, std::function<std::string()> pattern,
                           size_t max_dumps = default_max_oom_dumps,
                           std::function<void(const std::string& path)> written = {});

// While it exists, `signal` makes `dump` run. The handler only wakes a helper thread, which does
// the work: writing a file is not async-signal-safe. Signals that arrive while a dump runs are
// served by one more dump, not one each, and stderr says how many were skipped; those still
// waiting when the signal_dump goes are reported there too. One instance per process.
class signal_dump {
  public:
    /// @throws std::logic_error when another signal_dump exists; std::system_error when the
    ///         handler cannot be installed.
    signal_dump(int signal, std::function<void()> dump);
    ~signal_dump();
    signal_dump(const signal_dump&) = delete;
    signal_dump& operator=(const signal_dump&) = delete;

  private:
    struct state;
    std::unique_ptr<state> state_;
};

}  // namespace memtrail::recorder
