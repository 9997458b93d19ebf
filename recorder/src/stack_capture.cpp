// Built with -fno-omit-frame-pointer (see CMakeLists.txt): the frame-pointer walk starts from
// capture_stack's own frame record.

#include "memtrail/recorder/stack_capture.hpp"

#include <pthread.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <stdexcept>

#include "detail/libunwind_library.hpp"

namespace memtrail::recorder {

namespace {

std::atomic<detail::unw_backtrace_function> unw_backtrace_pointer{nullptr};

struct stack_bounds {
    uintptr_t low = 0;
    uintptr_t high = 0;
};

// The calling thread's stack, asked once per thread (pthread_getattr_np reads /proc for the
// main thread, far too slow for every capture).
const stack_bounds& thread_stack_bounds() {
    thread_local const stack_bounds bounds = [] {
        stack_bounds result;
        pthread_attr_t attributes;
        if (pthread_getattr_np(pthread_self(), &attributes) == 0) {
            void* address = nullptr;
            size_t size = 0;
            if (pthread_attr_getstack(&attributes, &address, &size) == 0) {
                result.low = reinterpret_cast<uintptr_t>(address);
                result.high = result.low + size;
            }
            pthread_attr_destroy(&attributes);
        }
        return result;
    }();
    return bounds;
}

// Follows the chain of frame records (saved frame pointer, return address) from `frame`.
// Stops at the first record that is outside this thread's stack, misaligned, or not above the
// previous one (callers' frames lie at higher addresses), so a frame built without frame
// pointers ends the walk instead of sending it through arbitrary memory.
size_t walk_frame_pointers(uintptr_t frame, void** out, size_t capacity) {
    const stack_bounds& bounds = thread_stack_bounds();
    size_t count = 0;
    while (count < capacity) {
        if (frame < bounds.low || frame + 2 * sizeof(uintptr_t) > bounds.high ||
            frame % alignof(uintptr_t) != 0) {
            break;
        }
        const auto* record = reinterpret_cast<const uintptr_t*>(frame);
        const uintptr_t caller_frame = record[0];
        const uintptr_t return_address = record[1];
        if (return_address == 0) {
            break;
        }
        out[count++] = reinterpret_cast<void*>(return_address);
        if (caller_frame <= frame) {
            break;
        }
        frame = caller_frame;
    }
    return count;
}

// unw_backtrace's first address lies in capture_stack itself.
constexpr size_t libunwind_own_frames = 1;

}  // namespace

std::string_view unwinder_name(unwinder method) {
    return method == unwinder::frame_pointer ? "frame_pointer" : "libunwind";
}

bool parse_unwinder(std::string_view name, unwinder& out) {
    if (name == "libunwind") {
        out = unwinder::libunwind;
        return true;
    }
    if (name == "frame_pointer") {
        out = unwinder::frame_pointer;
        return true;
    }
    return false;
}

void prepare_stack_capture(unwinder method) {
    if (method == unwinder::libunwind) {
        unw_backtrace_pointer.store(detail::load_unw_backtrace(), std::memory_order_release);
    }
    std::array<uintptr_t, max_stack_depth> warm_up;
    capture_stack(method, warm_up);
}

[[gnu::noinline]] size_t capture_stack(unwinder method, std::span<uintptr_t> out, size_t skip) {
    std::array<void*, max_stack_depth + libunwind_own_frames + 1> buffer;
    size_t own_frames = 0;
    size_t count = 0;
    if (method == unwinder::frame_pointer) {
        const size_t wanted = std::min(out.size() + skip, buffer.size());
        count = walk_frame_pointers(reinterpret_cast<uintptr_t>(__builtin_frame_address(0)),
                                    buffer.data(), wanted);
    } else {
        const auto backtrace = unw_backtrace_pointer.load(std::memory_order_acquire);
        if (backtrace == nullptr) {
            throw std::logic_error("memtrail: capture_stack before prepare_stack_capture");
        }
        own_frames = libunwind_own_frames;
        const size_t wanted = std::min(out.size() + skip + own_frames, buffer.size());
        count =
            static_cast<size_t>(std::max(backtrace(buffer.data(), static_cast<int>(wanted)), 0));
    }
    const size_t first = std::min(own_frames + skip, count);
    const size_t written = std::min(count - first, out.size());
    for (size_t i = 0; i < written; ++i) {
        out[i] = reinterpret_cast<uintptr_t>(buffer[first + i]);
    }
    return written;
}

}  // namespace memtrail::recorder
