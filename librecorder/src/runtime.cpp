#include "detail/runtime.hpp"

#include <chrono>
#include <cstdio>
#include <stdexcept>

#include "detail/environment.hpp"
#include "detail/fork_gate.hpp"
#include "detail/live_endpoint.hpp"
#include "memtrail/core/simulated_device.hpp"
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

runtime& runtime::get() {
    // Never destroyed: a host program may free memory from its own static destructors, after
    // ours would have run.
    static runtime* instance = new runtime();
    return *instance;
}

runtime::runtime() {
    const environment_settings settings = read_environment();
    devices_ = make_devices(settings);
    std::vector<device*> pointers;
    for (const auto& d : devices_) {
        pointers.push_back(d.get());
    }
    allocator_ = std::make_unique<caching_allocator>(pointers, settings.allocator);
    recorder_ = std::make_unique<recorder>(*allocator_);
    default_max_entries_ = settings.history.max_entries;
    recorder_->record_memory_history(settings.history);
    oom_dump_pattern_ = settings.oom_dump_pattern;
    dump_on_out_of_memory(*recorder_, [this] {
        std::lock_guard<std::mutex> lock(triggers_mutex_);
        return oom_dump_pattern_;
    });
    set_signal_dump(settings.dump_signal, settings.signal_dump_pattern);
    if (settings.live) {
        open_live_endpoint(*recorder_);
    }
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
    const std::string path = expand_dump_path(
        pattern, -1, std::chrono::duration_cast<std::chrono::nanoseconds>(now).count());
    recorder_->dump_snapshot(path);
    std::fprintf(stderr, "memtrail: snapshot written to %s\n", path.c_str());
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
