#pragma once
// Unix time in nanoseconds from the CPU's time-stamp counter. Every recorded call reads the
// clock; clock_gettime costs about 20 ns natively and several times that inside a VM or a
// user-space kernel (the GPU hosts run gVisor), while the counter costs a few. The counter's
// rate is measured against the system clock and re-measured about once a second, so the two
// never part by more than a second's drift. Without a usable counter it is the system clock.

#include <cstdint>

namespace memtrail::recorder::detail {

int64_t system_now_ns();
int64_t fast_now_ns();

}  // namespace memtrail::recorder::detail
