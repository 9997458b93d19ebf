#include <chrono>
#include <cstdio>
#include <exception>

#include "memtrail/recorder/dump_triggers.hpp"

namespace memtrail::recorder {

void dump_on_out_of_memory(recorder& history, std::string pattern) {
    dump_on_out_of_memory(history, [pattern = std::move(pattern)] { return pattern; });
}

void dump_on_out_of_memory(recorder& history, std::function<std::string()> pattern) {
    caching_allocator& allocator = history.allocator();
    for (int d = 0; d < allocator.device_count(); ++d) {
        allocator.on(d).add_oom_observer([&history, pattern](int device, uint64_t, uint64_t,
                                                             uint64_t) {
            // The allocation is failing already: whatever happens here must not replace its
            // out_of_memory_error, so nothing escapes.
            try {
                const std::string current = pattern();
                if (current.empty()) {
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
