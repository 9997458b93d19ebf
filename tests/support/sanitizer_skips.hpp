#pragma once
// Under ThreadSanitizer, a thread that used libunwind crashes when it exits: libunwind's
// per-thread cache is freed by a thread-specific-data destructor that locks a mutex after TSan
// has retired the thread, and TSan's interceptor then reads freed thread state. Tests that
// capture libunwind stacks on threads they start are skipped in TSan builds; the frame-pointer
// variants of the same tests still run there.

#include <gtest/gtest.h>

#include "memtrail/stacks/stack_capture.hpp"

#if defined(MEMTRAIL_TSAN_BUILD)
#define MEMTRAIL_SKIP_LIBUNWIND_THREADS_UNDER_TSAN(method)                                \
    do {                                                                                  \
        if ((method) == ::memtrail::recorder::unwinder::libunwind) {                      \
            GTEST_SKIP() << "libunwind's thread-exit destructor crashes ThreadSanitizer"; \
        }                                                                                 \
    } while (0)
#else
#define MEMTRAIL_SKIP_LIBUNWIND_THREADS_UNDER_TSAN(method) static_cast<void>(method)
#endif
