#pragma once
// The verdict of an OOM report: its device total, its cap, its primary and secondary causes.

#include <cstdint>

#include "memtrail/analysis/oom_report.hpp"

namespace memtrail::analysis::detail {

struct verdict_inputs {
    uint64_t releasable_after_sync = 0;  // segments holding only pending and free blocks
    uint64_t peak_reserved = 0;          // the most the trace ever reserved
    double fraction = 0.0;               // the recorded or given memory fraction, 0 if none
    uint64_t given_device_total = 0;     // --device-memory
};

// Fills the report's device total, cap, verdicts, explanation and unknowns.
void decide_verdict(oom_report& report, const verdict_inputs& inputs);

}  // namespace memtrail::analysis::detail
