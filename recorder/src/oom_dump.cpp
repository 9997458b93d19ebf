#include <atomic>
#include <chrono>
#include <cstdio>
#include <exception>
#include <memory>

#include "memtrail/recorder/dump_triggers.hpp"

namespace memtrail::recorder {

namespace {

bool is_power_of_ten(uint64_t n) {
    while (n >= 10 && n % 10 == 0) {
        n /= 10;
    }
    return n == 1;
}

}  // namespace

void dump_on_out_of_memory(recorder& history, std::string pattern, size_t max_dumps) {
    dump_on_out_of_memory(
        history, [pattern = std::move(pattern)] { return pattern; }, max_dumps);
}

void dump_on_out_of_memory(recorder& history, std::function<std::string()> pattern,
                           size_t max_dumps, std::function<void(const std::string& path)> written) {
    caching_allocator& allocator = history.allocator();
    // One count for every device: the limit is on files written, wherever the OOM happens.
    auto out_of_memory_count = std::make_shared<std::atomic<uint64_t>>(0);
    for (int d = 0; d < allocator.device_count(); ++d) {
        allocator.on(d).add_oom_observer([&history, pattern, max_dumps, out_of_memory_count,
                                          written](int device, uint64_t, uint64_t, uint64_t) {
            // The allocation is failing already: whatever happens here must not replace its
            // out_of_memory_error, so nothing escapes.
            try {
                const std::string current = pattern();
                if (current.empty()) {
                    return;
                }
                const uint64_t count = out_of_memory_count->fetch_add(1) + 1;
                if (count > max_dumps) {
                    const uint64_t skipped = count - max_dumps;
                    if (is_power_of_ten(skipped)) {
                        std::fprintf(stderr,
                                     "memtrail: out of memory on device %d, no snapshot written: "
                                     "only the first %zu out-of-memory snapshots are (%llu "
                                     "skipped so far)\n",
                                     device, max_dumps, static_cast<unsigned long long>(skipped));
                    }
                    return;
                }
                const auto now = std::chrono::system_clock::now().time_since_epoch();
                const std::string path = expand_dump_path(
                    current, device,
                    std::chrono::duration_cast<std::chrono::nanoseconds>(now).count());
                history.dump_snapshot(path);
                std::fprintf(stderr,
                             "memtrail: out of memory on device %d, snapshot written to %s\n",
                             device, path.c_str());
                if (written) {
                    written(path);
                }
            } catch (const std::exception& error) {
                std::fprintf(stderr, "memtrail: out of memory on device %d, snapshot failed: %s\n",
                             device, error.what());
            } catch (...) {
                std::fprintf(stderr, "memtrail: out of memory on device %d, snapshot failed\n",
                             device);
            }
        });
    }
}

}  // namespace memtrail::recorder
