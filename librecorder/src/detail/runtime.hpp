#pragma once
// librecorder's process-wide state: the devices MEMTRAIL_DEVICE names, one caching allocator over
// them, its recorder, and the dump triggers, made at the first C API call.

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "memtrail/core/caching_allocator.hpp"
#include "memtrail/recorder/dump_triggers.hpp"
#include "memtrail/recorder/recorder.hpp"

namespace memtrail::recorder::librecorder {

class runtime {
  public:
    /// The runtime, made on first use from the environment.
    /// @throws std::exception when the environment is invalid or the device cannot start; the
    ///         next call tries again.
    static runtime& get();

    caching_allocator& allocator() { return *allocator_; }
    recorder& history() { return *recorder_; }
    // What MEMTRAIL_MAX_ENTRIES asks for, used when a caller passes 0.
    size_t default_max_entries() const { return default_max_entries_; }

    // A snapshot after every out-of-memory, to expand_dump_path(pattern); "" for none. Replaces
    // what MEMTRAIL_OOM_DUMP or an earlier call set.
    void set_oom_dump_pattern(std::string pattern);
    // A snapshot whenever the process receives `signal`; "" (or signal 0) for none. Replaces what
    // MEMTRAIL_SIGNAL_DUMP or an earlier call set. @throws std::system_error as signal_dump.
    void set_signal_dump(int signal, std::string pattern);

    // The host runtime's garbage collector (a Python or R callback), asked to free memory on
    // memory pressure and once more before an allocation fails; an empty function for none.
    // Returns whether it freed anything.
    using collector = std::function<bool(int device, memory_pressure pressure)>;
    void set_collector(collector collect);
    bool collect(int device, memory_pressure pressure);

  private:
    runtime();
    void write_signal_dump(const std::string& pattern);

    std::vector<std::unique_ptr<device>> devices_;
    std::unique_ptr<caching_allocator> allocator_;
    std::unique_ptr<recorder> recorder_;
    size_t default_max_entries_ = 0;

    std::mutex triggers_mutex_;  // guards the three below
    std::string oom_dump_pattern_;
    std::unique_ptr<signal_dump> signal_dump_;
    std::shared_ptr<const collector> collector_;
    std::once_flag collector_installed_;  // the allocator's free-memory callbacks forward to it
};

}  // namespace memtrail::recorder::librecorder
