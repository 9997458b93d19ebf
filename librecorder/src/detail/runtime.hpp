#pragma once
// librecorder's process-wide state: the devices MEMTRAIL_DEVICE names, one caching allocator over
// them, its recorder, and the dump triggers, made at the first C API call.

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "detail/job_identity.hpp"
#include "memtrail/core/caching_allocator.hpp"
#include "memtrail/recorder/dump_triggers.hpp"
#include "memtrail/recorder/recorder.hpp"

namespace memtrail::recorder::librecorder {

class runtime {
  public:
    /// The runtime, made on first use from the environment.
    /// @throws std::exception when the environment is invalid or the device cannot start; the
    ///         next call tries again.
    static runtime& get() {
        // Inline, one load once made: every C API call asks.
        if (runtime* const made = made_.load(std::memory_order_acquire)) [[likely]] {
            return *made;
        }
        return make();
    }

    caching_allocator& allocator() { return *allocator_; }
    // The recorder in front of the allocator: every allocation, free and pool call goes through it.
    memtrail::recorder::recorder& recorder() { return *recorder_; }
    // What MEMTRAIL_MAX_ENTRIES asks for, used when a caller passes 0.
    size_t default_max_entries() const { return default_max_entries_; }
    // The process's place in its job (RANK, ...), for the %r, %l and %j of dump paths.
    const job_identity& job() const { return job_; }
    // Writes a snapshot to `path` and adds it to memtrail run's list (MEMTRAIL_RUN_FILES).
    void dump_snapshot(const std::string& path);

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

    // --- memory outside the allocator (memtrail run on a PyTorch process) ---------------------
    // From now on the device's used memory is divided at the moments below (memtrail run, once
    // the interposer records outside allocations; before that, the remainder would hide them).
    // Static: it does not start the runtime, so CUDA starts no sooner than it would have.
    static void account_outside_memory();
    // Before the first allocation of `device`, of either kind, while accounting: its "start" row
    // (the CUDA context and other processes, before this process allocated anything).
    void note_device_in_use(int device) {
        if (accounting_.load(std::memory_order_acquire)) [[unlikely]] {
            note_device_in_use_accounting(device);
        }
    }
    // The device's memory now, for accounting; nullopt when not accounting, or for a device this
    // process has not used (asking would start a CUDA context on it).
    std::optional<device_usage> usage(int device);
    // On the simulated device, which stands in for CUDA, outside allocations take its memory as
    // CUDA's would: false when it has no room for `bytes`. Does nothing on a CUDA device.
    bool take_outside_memory(int device, uint64_t bytes);
    void give_back_outside_memory(int device, uint64_t bytes);

  private:
    runtime();
    void write_signal_dump(const std::string& pattern);

    std::vector<std::unique_ptr<device>> devices_;
    std::unique_ptr<caching_allocator> allocator_;
    std::unique_ptr<memtrail::recorder::recorder> recorder_;
    size_t default_max_entries_ = 0;
    job_identity job_;
    std::string run_files_;  // MEMTRAIL_RUN_FILES

    static runtime& make();
    void note_device_in_use_accounting(int device);
    static std::atomic<runtime*> made_;
    static std::atomic<bool> accounting_;
    std::unique_ptr<std::atomic<bool>[]> in_use_;  // per device: note_device_in_use has run
    std::mutex outside_mutex_;                     // guards the one below
    std::vector<uint64_t> outside_on_simulated_;   // per device

    std::mutex triggers_mutex_;  // guards the three below
    std::string oom_dump_pattern_;
    std::unique_ptr<signal_dump> signal_dump_;
    std::shared_ptr<const collector> collector_;
    std::once_flag collector_installed_;  // the allocator's free-memory callbacks forward to it
};

}  // namespace memtrail::recorder::librecorder
