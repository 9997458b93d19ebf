#pragma once
// A recorder's trace ring filled before anything is timed: a ring fills once (a million entries,
// 56 MB faulted in page by page) and then overwrites its oldest entries, so a benchmark that
// began with an empty ring would charge that one-time cost to the pairs it timed first.

#include <cstddef>

#include "memtrail/recorder/history_options.hpp"
#include "memtrail/recorder/recorder.hpp"

namespace memtrail::bench {

// Records pairs of `size` bytes on stream 0 without stacks until the ring has wrapped, then
// switches recording off (each benchmark sets its own recording after).
inline void fill_trace_ring(recorder::recorder& history, size_t size) {
    recorder::history_options options;
    options.enabled = recorder::record_mode::all;
    options.context = recorder::context_mode::none;
    history.record_memory_history(options);
    // An allocation records one entry, a free two (free requested, free completed).
    for (size_t i = 0; i < recorder::default_max_entries / 3 + 1; ++i) {
        history.free(history.allocate(size, 0));
    }
    options.enabled = recorder::record_mode::off;
    history.record_memory_history(options);
}

}  // namespace memtrail::bench
