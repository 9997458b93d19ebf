// Built with -fno-omit-frame-pointer (see CMakeLists.txt): the frame-pointer walk starts from
// capture_stack's own frame record.

#include "memtrail/stacks/stack_capture.hpp"

#include <pthread.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <stdexcept>

#include "detail/eh_frame_unwinder.hpp"
#include "detail/libunwind_library.hpp"

namespace memtrail::recorder {

// The calling thread's stack, asked once per thread (pthread_getattr_np reads /proc for the
// main thread, far too slow for every capture).
const detail::stack_range& detail::this_thread_stack() {
    thread_local const stack_range bounds = [] {
        stack_range result;
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

namespace {

std::atomic<detail::unw_backtrace_function> unw_backtrace_pointer{nullptr};

// Follows the chain of frame records (saved frame pointer, return address) up the stack. Ends
// at the first record that is outside this thread's stack, misaligned, or not above the previous
// one (callers' frames lie at higher addresses), so a frame built without frame pointers ends the
// walk instead of sending it through arbitrary memory.
class frame_walk {
  public:
    frame_walk(uintptr_t frame, const detail::stack_range& bounds)
        : frame_(frame),
          // Frames only go up from the first, so the low bound is checked once.
          highest_record_(frame >= bounds.low && bounds.high >= bounds.low + record_size
                              ? bounds.high - record_size
                              : 0) {}

    // The next return address, or 0 at the end of the chain.
    uintptr_t next() {
        if (frame_ > highest_record_ || frame_ % alignof(uintptr_t) != 0) {
            return 0;
        }
        const auto* record = reinterpret_cast<const uintptr_t*>(frame_);
        // A caller's record that is not above this one ends the walk after this address.
        frame_ = record[0] > frame_ ? record[0] : highest_record_ + 1;
        return record[1];
    }

  private:
    static constexpr uintptr_t record_size = 2 * sizeof(uintptr_t);
    uintptr_t frame_;
    const uintptr_t highest_record_;  // 0: the stack's bounds are unknown, or `frame` is outside
};

// Leaves out the first `skip` return addresses from `frame` on, and writes the next ones
// straight to `out`.
size_t walk_frame_pointers(uintptr_t frame, size_t skip, std::span<uintptr_t> out) {
    frame_walk walk(frame, detail::this_thread_stack());
    for (size_t i = 0; i < skip; ++i) {
        if (walk.next() == 0) {
            return 0;
        }
    }
    size_t count = 0;
    while (count < out.size()) {
        const uintptr_t return_address = walk.next();
        // Code never lives in the first page: a smaller "return address" was read from a frame
        // without a frame pointer (a thread's start routine), so the chain ends there.
        if (return_address < 4096) {
            break;
        }
        out[count++] = return_address;
    }
    return count;
}

// unw_backtrace's first address lies in capture_stack (or capture_walked_stack) itself.
constexpr size_t libunwind_own_frames = 1;

}  // namespace

std::string_view unwinder_name(unwinder method) {
    switch (method) {
        case unwinder::frame_pointer:
            return "frame_pointer";
        case unwinder::eh_frame:
            return "eh_frame";
        case unwinder::libunwind:
            break;
    }
    return "libunwind";
}

bool parse_unwinder(std::string_view name, unwinder& out) {
    for (const unwinder method :
         {unwinder::libunwind, unwinder::eh_frame, unwinder::frame_pointer}) {
        if (name == unwinder_name(method)) {
            out = method;
            return true;
        }
    }
    return false;
}

void prepare_stack_capture(unwinder method) {
    if (method != unwinder::frame_pointer) {  // eh_frame falls back on libunwind
        unw_backtrace_pointer.store(detail::load_unw_backtrace(), std::memory_order_release);
    }
    std::array<uintptr_t, max_stack_depth> warm_up;
    capture_stack(method, warm_up);
}

namespace {

// The stack of the function whose frame record is `record` (the caller of the function this is
// inlined into, which must be kept out of line and keep a frame pointer): its eh_frame walk as
// it was kept, or the frames written to `out`. Every path fills the one object returned, which the
// caller's own result then is: a copy of what the walk wrote would be read back in wider loads
// than it was written with, and wait for those stores (a store-forwarding stall on every capture).
[[gnu::always_inline]] inline detail::walked_stack capture_from(unwinder method,
                                                                std::span<uintptr_t> out,
                                                                size_t skip,
                                                                const uintptr_t* record) {
    detail::walked_stack walked;
    if (method == unwinder::frame_pointer) {
        // The walk starts in the record, whose return address is the caller's.
        walked.frames =
            out.first(walk_frame_pointers(reinterpret_cast<uintptr_t>(record), skip, out));
        return walked;
    }
    // The record gives the caller's registers: its return address, the stack pointer after the
    // return (just above the record) and the caller's rbp.
    if (method == unwinder::eh_frame &&
        detail::walk_eh_frame({record[1], reinterpret_cast<uintptr_t>(record + 2), record[0]},
                              detail::this_thread_stack(), skip, out, walked)) {
        return walked;
    }
    const auto backtrace = unw_backtrace_pointer.load(std::memory_order_acquire);
    if (backtrace == nullptr) {
        throw std::logic_error("memtrail: capture_stack before prepare_stack_capture");
    }
    std::array<void*, max_stack_depth + libunwind_own_frames + 1> buffer;
    const size_t wanted = std::min(out.size() + skip + libunwind_own_frames, buffer.size());
    const auto count =
        static_cast<size_t>(std::max(backtrace(buffer.data(), static_cast<int>(wanted)), 0));
    const size_t first = std::min(libunwind_own_frames + skip, count);
    const size_t written = std::min(count - first, out.size());
    for (size_t i = 0; i < written; ++i) {
        out[i] = reinterpret_cast<uintptr_t>(buffer[first + i]);
    }
    walked = {out.first(written)};
    return walked;
}

}  // namespace

[[gnu::noinline]] size_t capture_stack(unwinder method, std::span<uintptr_t> out, size_t skip) {
    const detail::walked_stack walked =
        capture_from(method, out, skip, static_cast<const uintptr_t*>(__builtin_frame_address(0)));
    if (walked.frames.data() != out.data()) {
        std::copy(walked.frames.begin(), walked.frames.end(), out.begin());
    }
    return walked.frames.size();
}

[[gnu::noinline]] detail::walked_stack detail::capture_walked_stack(unwinder method,
                                                                    std::span<uintptr_t> out,
                                                                    size_t skip) {
    return capture_from(method, out, skip,
                        static_cast<const uintptr_t*>(__builtin_frame_address(0)));
}

}  // namespace memtrail::recorder
