#include "detail/runtime.hpp"

#include <chrono>
#include <cstdio>
#include <stdexcept>

#include "detail/environment.hpp"
#include "detail/fork_gate.hpp"
#include "detail/live_endpoint.hpp"
#include "detail/process_memory.hpp"
#include "detail/written_snapshots.hpp"
#include "memtrail/core/simulated_device.hpp"
#include "memtrail/recorder/recorder.hpp"
#ifdef MEMTRAIL_HAVE_CUDA
#include "memtrail/core/cuda_device.hpp"
#endif

namespace memtrail::recorder::librecorder {

namespace {

std::vector<std::unique_ptr<device>> make_devices(const environment_settings& settings) {
    std::vector<std::unique_ptr<device>> devices;
    if (settings.simulated_device) {
        simulated_device_options options;
        options.capacity = settings.simulated_capacity;
        auto simulated = std::make_unique<simulated_device>(options);
        if (settings.fail_nth_allocation != 0) {
            simulated->fail_nth_allocation(settings.fail_nth_allocation);
        }
        if (settings.failure_rate > 0.0) {
            simulated->set_failure_probability(settings.failure_rate, settings.failure_seed);
        }
        devices.push_back(std::move(simulated));
        return devices;
    }
#ifdef MEMTRAIL_HAVE_CUDA
    const int count = cuda_device::count();
    if (count == 0) {
        throw std::runtime_error(
            "memtrail: MEMTRAIL_DEVICE=cuda but no CUDA device is visible (use "
            "MEMTRAIL_DEVICE=sim:80GiB for a simulated one)");
    }
    for (int i = 0; i < count; ++i) {
        devices.push_back(std::make_unique<cuda_device>(i));
    }
    return devices;
#else
    throw std::runtime_error(
        "memtrail: this librecorder was built without CUDA; set MEMTRAIL_DEVICE=sim[:capacity] "
        "for a simulated device, or rebuild with the CUDA toolkit");
#endif
}

}  // namespace

std::atomic<runtime*> runtime::made_{nullptr};

runtime& runtime::make() {
    // Never destroyed: a host program may free memory from its own static destructors, after
    // ours would have run. A constructor that throws leaves it to the next call to try again.
    static runtime* instance = new runtime();
    made_.store(instance, std::memory_order_release);
    return *instance;
}

runtime::runtime() {
    const environment_settings settings = read_environment();
    if (!settings.allocator_conflict.empty()) {
        // Once per process: the runtime is made once, and a forked child inherits it.
        std::fprintf(stderr, "%s\n", settings.allocator_conflict.c_str());
    }
    choose_python_frames_source(settings.python_frames);
    devices_ = make_devices(settings);
    std::vector<device*> pointers;
    for (const auto& d : devices_) {
        pointers.push_back(d.get());
    }
    allocator_ = std::make_unique<caching_allocator>(pointers, settings.allocator);
    recorder_ = std::make_unique<memtrail::recorder::recorder>(*allocator_);
    default_max_entries_ = settings.history.max_entries;
    job_ = settings.job;
    recorder_->set_job_identity(job_);
    run_files_ = settings.run_files;
    recorder_->record_memory_history(settings.history);
    in_use_ = std::make_unique<std::atomic<bool>[]>(devices_.size());
    outside_on_simulated_.assign(devices_.size(), 0);
    recorder_->set_usage_source([this](int device) { return usage(device); });
    // Before the OOM snapshot (added below), so that it holds this row.
    for (int d = 0; d < allocator_->device_count(); ++d) {
        allocator_->on(d).add_oom_observer([this](int device, uint64_t, uint64_t, uint64_t) {
            try {
                if (const std::optional<device_usage> now = usage(device)) {
                    recorder_->record_accounting("oom", device, *now);
                }
            } catch (const std::exception& error) {
                std::fprintf(stderr, "memtrail: no memory accounting at the out-of-memory: %s\n",
                             error.what());
            }
        });
    }
    oom_dump_pattern_ = settings.oom_dump_pattern;
    dump_on_out_of_memory(
        *recorder_,
        [this] {
            std::lock_guard<std::mutex> lock(triggers_mutex_);
            return expand_job_placeholders(oom_dump_pattern_, job_);
        },
        default_max_oom_dumps,
        [this](const std::string& path) { note_written_snapshot(run_files_, path); });
    set_signal_dump(settings.dump_signal, settings.signal_dump_pattern);
    if (settings.live) {
        open_live_endpoint(*recorder_);
    }
}

std::atomic<bool> runtime::accounting_{false};

void runtime::account_outside_memory() {
    accounting_.store(true, std::memory_order_release);
}

void runtime::note_device_in_use_accounting(int device) {
    if (device < 0 || static_cast<size_t>(device) >= devices_.size() ||
        in_use_[static_cast<size_t>(device)].load(std::memory_order_acquire) ||
        in_use_[static_cast<size_t>(device)].exchange(true)) {
        return;
    }
    if (const std::optional<device_usage> now = usage(device)) {
        recorder_->record_accounting("start", device, *now);
    }
}

std::optional<device_usage> runtime::usage(int device) {
    if (!accounting_.load(std::memory_order_acquire) || device < 0 ||
        static_cast<size_t>(device) >= devices_.size() ||
        !in_use_[static_cast<size_t>(device)].load(std::memory_order_acquire)) {
        return std::nullopt;
    }
    const memory_info info = devices_[static_cast<size_t>(device)]->get_memory_info();
    device_usage now;
    now.total = info.total;
    now.used = info.total - info.free;
    if (dynamic_cast<simulated_device*>(devices_[static_cast<size_t>(device)].get()) != nullptr) {
        now.this_process = now.used;  // no context, no other process
    } else {
        now.this_process = nvml_process_memory(device, now.unsplit);
    }
    return now;
}

bool runtime::take_outside_memory(int device, uint64_t bytes) {
    if (device < 0 || static_cast<size_t>(device) >= devices_.size()) {
        return true;  // the recorder reports the bad device
    }
    auto* simulated = dynamic_cast<simulated_device*>(devices_[static_cast<size_t>(device)].get());
    if (simulated == nullptr) {
        return true;
    }
    std::lock_guard<std::mutex> lock(outside_mutex_);
    if (simulated->get_memory_info().free < bytes) {
        return false;
    }
    outside_on_simulated_[static_cast<size_t>(device)] += bytes;
    simulated->set_external_usage(outside_on_simulated_[static_cast<size_t>(device)]);
    return true;
}

void runtime::give_back_outside_memory(int device, uint64_t bytes) {
    if (device < 0 || static_cast<size_t>(device) >= devices_.size()) {
        return;
    }
    auto* simulated = dynamic_cast<simulated_device*>(devices_[static_cast<size_t>(device)].get());
    if (simulated == nullptr) {
        return;
    }
    std::lock_guard<std::mutex> lock(outside_mutex_);
    uint64_t& taken = outside_on_simulated_[static_cast<size_t>(device)];
    taken = taken > bytes ? taken - bytes : 0;
    simulated->set_external_usage(taken);
}

void runtime::set_oom_dump_pattern(std::string pattern) {
    std::lock_guard<std::mutex> lock(triggers_mutex_);
    oom_dump_pattern_ = std::move(pattern);
}

void runtime::set_signal_dump(int signal, std::string pattern) {
    std::lock_guard<std::mutex> lock(triggers_mutex_);
    signal_dump_.reset();  // one per process: the old one goes first
    if (signal != 0 && !pattern.empty()) {
        signal_dump_ = std::make_unique<signal_dump>(
            signal, [this, pattern = std::move(pattern)] { write_signal_dump(pattern); });
    }
}

void runtime::write_signal_dump(const std::string& pattern) {
    const fork_gate_scope gate;  // a helper thread's dump: a fork waits for it too
    const auto now = std::chrono::system_clock::now().time_since_epoch();
    const std::string path =
        expand_dump_path(expand_job_placeholders(pattern, job_), -1,
                         std::chrono::duration_cast<std::chrono::nanoseconds>(now).count());
    dump_snapshot(path);
    std::fprintf(stderr, "memtrail: snapshot written to %s\n", path.c_str());
}

void runtime::dump_snapshot(const std::string& path) {
    recorder_->dump_snapshot(path);
    note_written_snapshot(run_files_, path);
}

void runtime::set_collector(collector collector_function) {
    auto next = collector_function
                    ? std::make_shared<const collector>(std::move(collector_function))
                    : nullptr;
    if (next) {
        // The allocator's callbacks cannot be removed: they are added once, with the first
        // collector, and forward to whichever is set (none: they free nothing, as if absent).
        std::call_once(collector_installed_, [this] {
            for (int d = 0; d < allocator_->device_count(); ++d) {
                allocator_->on(d).add_free_memory_callback(
                    [this](int device, memory_pressure pressure) {
                        return this->collect(device, pressure);
                    });
            }
        });
    }
    std::lock_guard<std::mutex> lock(triggers_mutex_);
    collector_ = std::move(next);
}

bool runtime::collect(int device, memory_pressure pressure) {
    std::shared_ptr<const collector> current;
    {
        std::lock_guard<std::mutex> lock(triggers_mutex_);
        current = collector_;
    }
    return current && (*current)(device, pressure);
}

}  // namespace memtrail::recorder::librecorder
