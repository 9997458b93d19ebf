#pragma once
// Unix time in nanoseconds from the CPU's time-stamp counter. Every recorded call reads the
// clock, and the counter is the cheaper read: on the H100 hosts (KVM) `rdtsc` takes about 21 ns
// and clock_gettime 34 to 44 (the development machine: 9 and 20). The counter's rate is measured
// against the system clock and re-measured about once a second, so the two never part by more
// than a second's drift. Without a usable counter it is the system clock.

#include <cstdint>

namespace memtrail::recorder::detail {

int64_t system_now_ns();
int64_t fast_now_ns();

}  // namespace memtrail::recorder::detail
