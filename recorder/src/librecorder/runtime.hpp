#pragma once
// librecorder's process-wide state: the devices MEMTRAIL_DEVICE names, one caching allocator over
// them, its recorder, and the dump triggers, made at the first C API call.

#include <memory>
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

  private:
    runtime();

    std::vector<std::unique_ptr<device>> devices_;
    std::unique_ptr<caching_allocator> allocator_;
    std::unique_ptr<recorder> recorder_;
    std::unique_ptr<signal_dump> signal_dump_;
    size_t default_max_entries_ = 0;
};

}  // namespace memtrail::recorder::librecorder
