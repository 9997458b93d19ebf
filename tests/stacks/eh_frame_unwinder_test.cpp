// The eh_frame unwinder against libunwind on code built without frame pointers (this file is
// compiled with -fomit-frame-pointer -O2): stacks of every depth up to past 64 frames, through
// frames whose CFA is rsp-based, rbp-based (a variable-length array keeps a frame pointer) and
// through frames that use rbp as an ordinary register, on the main thread and on another, and
// through the C library's frames. The walk itself must not fall back on libunwind for any of
// them, or the comparison would prove nothing; a signal frame is the case it must leave to
// libunwind.

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <csignal>
#include <cstdlib>
#include <span>
#include <thread>
#include <utility>
#include <vector>

#include "detail/eh_frame_unwinder.hpp"
#include "memtrail/stacks/stack_capture.hpp"
#include "sanitizer_skips.hpp"

namespace {

using memtrail::recorder::capture_stack;
using memtrail::recorder::max_stack_depth;
using memtrail::recorder::prepare_stack_capture;
using memtrail::recorder::unwinder;
namespace detail = memtrail::recorder::detail;

// Frames capture_both asks for: all of them, but for the test of short walks.
size_t capture_window = max_stack_depth;

struct both_stacks {
    std::vector<uintptr_t> eh_frame = std::vector<uintptr_t>(capture_window);
    std::vector<uintptr_t> libunwind = std::vector<uintptr_t>(capture_window);
    std::vector<uintptr_t> public_eh_frame = std::vector<uintptr_t>(max_stack_depth);
    bool walked = false;  // the eh_frame walk finished without falling back on libunwind
    bool whole = false;   // it found the thread's kept walk unchanged
};

// Both unwinders from one frame: the walk starts at this function's return address, libunwind
// leaves out this function's own frame to start there too. This one frame keeps its frame
// record, which is where the walk reads its first registers. Without `public_too`, the public
// capture_stack (which walks too) is left out, so that only this call's walk is kept. Without
// `libunwind_too`, libunwind is left out: on a thread a test starts, its thread-exit destructor
// crashes ThreadSanitizer.
[[gnu::noinline, gnu::optimize("no-omit-frame-pointer")]] void capture_both(
    both_stacks& out, bool public_too = true, bool libunwind_too = true) {
    const auto* record = static_cast<const uintptr_t*>(__builtin_frame_address(0));
    detail::walked_stack walked;
    out.walked =
        detail::walk_eh_frame({record[1], reinterpret_cast<uintptr_t>(record + 2), record[0]},
                              detail::this_thread_stack(), 0, out.eh_frame, walked);
    out.whole = walked.whole;
    // No allocation (this may run in a signal handler): the frames fit where they are asked
    // for, and may lie there already.
    if (walked.frames.data() != out.eh_frame.data()) {
        std::copy(walked.frames.begin(), walked.frames.end(), out.eh_frame.begin());
    }
    out.eh_frame.resize(walked.frames.size());
    out.libunwind.resize(libunwind_too ? capture_stack(unwinder::libunwind, out.libunwind, 1) : 0);
    if (public_too) {
        out.public_eh_frame.resize(capture_stack(unwinder::eh_frame, out.public_eh_frame, 1));
    }
    asm volatile("");
}

volatile int sink;

// rsp-based frames of several sizes.
[[gnu::noinline]] void plain(int depth, both_stacks& out);
// A run-time sized allocation: the frame keeps rbp as its CFA register.
[[gnu::noinline]] void with_vla(int depth, both_stacks& out);
// Many live values: with -fomit-frame-pointer the compiler saves and uses rbp as a register.
[[gnu::noinline]] void register_hungry(int depth, both_stacks& out);

void next(int depth, both_stacks& out) {
    switch (depth % 3) {
        case 0:
            plain(depth - 1, out);
            break;
        case 1:
            with_vla(depth - 1, out);
            break;
        default:
            register_hungry(depth - 1, out);
            break;
    }
}

void plain(int depth, both_stacks& out) {
    volatile char local[96];
    local[depth % 5 * 16] = static_cast<char>(depth);
    if (depth <= 0) {
        capture_both(out);
    } else {
        next(depth, out);
    }
    sink = local[depth % 5 * 16];
}

void with_vla(int depth, both_stacks& out) {
    auto* local = static_cast<volatile char*>(
        __builtin_alloca(16 + (depth & 7) * sizeof(long) + static_cast<unsigned>(sink % 2)));
    local[0] = static_cast<char>(depth);
    if (depth <= 0) {
        capture_both(out);
    } else {
        next(depth, out);
    }
    sink = local[0];
}

void register_hungry(int depth, both_stacks& out) {
    // Unsigned: the arithmetic only keeps registers busy, and must not overflow (UBSan).
    unsigned a = static_cast<unsigned>(sink + depth), b = a * 3, c = b ^ 5, d = c + a, e = d * b,
             f = e - c, g = f + 11, h = g * d, i = h ^ e, j = i + f;
    if (depth <= 0) {
        capture_both(out);
    } else {
        next(depth, out);
    }
    sink = static_cast<int>(a + b + c + d + e + f + g + h + i + j);
}

void expect_same_stacks(int depth) {
    both_stacks out;
    next(depth + 1, out);
    EXPECT_TRUE(out.walked) << "the walk fell back on libunwind at depth " << depth;
    EXPECT_GE(out.libunwind.size(), static_cast<size_t>(depth));
    EXPECT_EQ(out.eh_frame, out.libunwind) << "at depth " << depth;
    EXPECT_EQ(out.public_eh_frame, out.libunwind) << "at depth " << depth;
}

class eh_frame_unwinder_test : public ::testing::Test {
  protected:
    void SetUp() override { prepare_stack_capture(unwinder::eh_frame); }
};

TEST_F(eh_frame_unwinder_test, gives_libunwinds_stacks_without_frame_pointers) {
    for (int depth = 0; depth <= 80; ++depth) {
        expect_same_stacks(depth);
    }
}

// A thread keeps walks of up to 96 frames; deeper stacks are walked frame by frame,
// and a walk that reaches past what it keeps after taking frames from a kept walk starts over.
TEST_F(eh_frame_unwinder_test, gives_libunwinds_stacks_deeper_than_a_kept_walk) {
    for (const int depth : {80, 90, 120, 150, 200, 240, 150, 60, 90, 200}) {
        expect_same_stacks(depth);
    }
}

// One call site for captures of any length, so that an empty one finds the walk a longer one kept.
[[gnu::noinline]] size_t capture_here(std::span<uintptr_t> out) {
    const size_t written = capture_stack(unwinder::eh_frame, out);
    asm volatile("");
    return written;
}

// A capture that asks for no frames writes none, when it finds a kept walk of its place too.
TEST_F(eh_frame_unwinder_test, writes_nothing_for_an_empty_window) {
    std::vector<uintptr_t> frames(max_stack_depth);
    const std::span<uintptr_t> all(frames);
    const std::span<uintptr_t> none;
    std::vector<size_t> written;
#pragma GCC unroll 1
    for (const std::span<uintptr_t> out : {all, none, all, none, none}) {
        written.push_back(capture_here(out));
    }
    EXPECT_GT(written[0], 0u);
    EXPECT_EQ(written, (std::vector<size_t>{written[0], 0, written[0], 0, 0}));
}

TEST_F(eh_frame_unwinder_test, gives_libunwinds_stacks_on_other_threads) {
    MEMTRAIL_SKIP_LIBUNWIND_THREADS_UNDER_TSAN(unwinder::libunwind);
    std::thread worker([] {
        for (int depth = 0; depth <= 70; depth += 7) {
            expect_same_stacks(depth);
        }
    });
    worker.join();
}

// The walk keeps the thread's last stack and reuses its outer frames when they still hold. Here
// the leaf frames match the last walk's (same code, same stack pointer) while a frame further out
// changed (from_a or from_b): the words read there differ, and the walk must see it.
[[gnu::noinline]] void leaf_twice_removed(both_stacks& out) {
    capture_both(out);
    asm volatile("");
}
[[gnu::noinline]] void from_a(both_stacks& out) {
    leaf_twice_removed(out);
    sink = 1;
}
[[gnu::noinline]] void from_b(both_stacks& out) {
    leaf_twice_removed(out);
    sink = 2;
}

TEST_F(eh_frame_unwinder_test, sees_a_changed_caller_under_the_same_frames) {
    static void (*volatile callers[])(both_stacks&) = {from_a, from_b, from_a, from_a, from_b};
    std::vector<uintptr_t> previous;
#pragma GCC unroll 1
    for (auto* caller : callers) {
        both_stacks out;
        caller(out);
        EXPECT_TRUE(out.walked);
        EXPECT_EQ(out.eh_frame, out.libunwind);
        EXPECT_EQ(out.public_eh_frame, out.libunwind);
        if (!previous.empty()) {
            EXPECT_EQ(previous.size(), out.libunwind.size());
        }
        previous = out.libunwind;
    }
}

// The walk keeps two walks per thread, so that allocations and frees from two places each find
// theirs whole. Here two leaves at the same depth take turns under outer callers that change
// (outer_a or outer_b): a kept walk whose innermost frames match may hold an outer frame that
// changed since, and the walk must see it. Only the walk and libunwind capture, so the two kept
// walks are the two leaves'.
// Two leaves (and below, two outer callers): one function each, told apart by `tag`.
template <int tag>
[[gnu::noinline]] void leaf(both_stacks& out) {
    capture_both(out, false);
    sink = tag;
}
// Between the leaf and the outer caller, so that the change lies beyond the leaf's own step.
[[gnu::noinline]] void middle(void (*callee)(both_stacks&), both_stacks& out) {
    callee(out);
    sink = 5;
}
template <int tag>
[[gnu::noinline]] void outer(void (*callee)(both_stacks&), both_stacks& out) {
    middle(callee, out);
    sink = tag;
}

using outer_caller = void (*)(void (*)(both_stacks&), both_stacks&);

// Sets rbp to its own frame, so that every call below starts with the same registers (the
// test's loop would otherwise leave a counter in rbp, and no kept frame would ever match).
[[gnu::noinline, gnu::optimize("no-omit-frame-pointer")]] void with_fixed_rbp(
    outer_caller via, void (*callee)(both_stacks&), both_stacks& out) {
    via(callee, out);
    asm volatile("");
}

TEST_F(eh_frame_unwinder_test, sees_a_changed_caller_under_either_kept_walk) {
    struct call {
        outer_caller via;
        void (*leaf)(both_stacks&);
    };
    constexpr auto a = outer<6>, b = outer<7>;
    constexpr auto x = leaf<3>, y = leaf<4>;
    static volatile const call calls[] = {
        {a, x}, {a, y}, {a, x}, {b, y}, {b, x}, {b, y},
        {a, y}, {a, x}, {b, x}, {a, x}, {b, y}, {a, y},
    };
    size_t i = 0;
#pragma GCC unroll 1
    for (const volatile call& c : calls) {
        both_stacks out;
        with_fixed_rbp(c.via, c.leaf, out);
        EXPECT_TRUE(out.walked) << "call " << i;
        EXPECT_EQ(out.eh_frame, out.libunwind) << "call " << i;
        ++i;
    }
}

// Walks `leaf` and its two callers, called through `via`, into `out`: whether the walk found its
// kept walk whole. Three frames, as the frames outside with_fixed_rbp hold the test's own
// counters in rbp, which change (a walk reads the words of its outermost frame's step too);
// and `out` is to be one object, at one address even where ASan moves locals off the stack,
// as the frames may keep that address in rbp.
bool walk_three_frames(outer_caller via, void (*leaf)(both_stacks&), both_stacks& out) {
    capture_window = 3;
    out = both_stacks{};
    with_fixed_rbp(via, leaf, out);
    capture_window = max_stack_depth;
    return out.whole;
}

// A thread keeps the walks of several places: five leaves in turn each find theirs whole from
// the second round on (two kept walks would have lost each before its next turn).
TEST_F(eh_frame_unwinder_test, keeps_the_walks_of_several_places) {
    static void (*volatile const leaves[])(both_stacks&) = {leaf<11>, leaf<12>, leaf<13>, leaf<14>,
                                                            leaf<15>};
    static both_stacks out;
    for (int round = 0; round < 3; ++round) {
#pragma GCC unroll 1
        for (size_t i = 0; i < std::size(leaves); ++i) {
            const bool whole = walk_three_frames(outer<6>, leaves[i], out);
            EXPECT_EQ(out.eh_frame, out.libunwind) << "round " << round << ", place " << i;
            if (round > 0) {
                EXPECT_TRUE(whole) << "round " << round << ", place " << i;
            }
        }
    }
}

// One place reached from two callers (as an operator allocates from each layer): the two walks
// share their innermost frames and differ further out. Each stays kept beside the other, so
// from the second round on each finds its own whole, whether the callers take turns or one
// comes again; a thread that kept one walk per innermost frame would find none whole while
// they take turns, each replacing the other.
TEST_F(eh_frame_unwinder_test, keeps_each_caller_of_one_place) {
    static outer_caller volatile const callers[] = {outer<8>, outer<9>, outer<8>, outer<9>,
                                                    outer<9>, outer<9>, outer<8>, outer<8>,
                                                    outer<9>, outer<8>};
    static both_stacks out;
    for (int round = 0; round < 2; ++round) {
#pragma GCC unroll 1
        for (size_t i = 0; i < std::size(callers); ++i) {
            const bool whole = walk_three_frames(callers[i], leaf<41>, out);
            EXPECT_EQ(out.eh_frame, out.libunwind) << "round " << round << ", call " << i;
            if (round > 0 || i >= 2) {
                EXPECT_TRUE(whole) << "round " << round << ", call " << i;
            }
        }
    }
}

// Code built without frame pointers keeps any value in rbp, and its callees save it: a word that
// changes from call to call without changing the callers. Here an outer caller puts a new
// value in rbp before each call (the callees save it), and no frame out to the next saved rbp
// uses rbp as its CFA: the walks are still found whole, and still libunwind's.
std::atomic<uintptr_t> next_rbp_value{0x1000};
[[gnu::noinline, gnu::optimize("omit-frame-pointer")]] void with_new_rbp(
    void (*callee)(both_stacks&), both_stacks& out) {
    const uintptr_t value = next_rbp_value.fetch_add(16);
    asm volatile("mov %0, %%rbp" : : "r"(value) : "rbp");
    middle(callee, out);
    sink = 10;
}

TEST_F(eh_frame_unwinder_test, finds_walks_whole_when_only_an_unused_rbp_changed) {
    static both_stacks out;
    for (int i = 0; i < 4; ++i) {
        const bool whole = walk_three_frames(with_new_rbp, leaf<21>, out);
        EXPECT_EQ(out.eh_frame, out.libunwind) << "call " << i;
        if (i > 0) {
            EXPECT_TRUE(whole) << "call " << i;
        }
    }
}

// The other side: where a frame takes its CFA from rbp, a changed rbp changes the callers even
// when every frame inside it is the same. with_callee_at's alloca puts its callee's frame at one
// address, whatever depth it was called at; called from two depths, the frames inside it are
// the same words at the same places, while its rbp, its CFA and its caller differ. (The deep
// caller's untouched room keeps the shallow call's words where the shallow walk read them.)
[[gnu::noinline]] void with_callee_at(uintptr_t callee_sp, void (*callee)(both_stacks&),
                                      both_stacks& out) {
    volatile char here = 0;
    const size_t size = reinterpret_cast<uintptr_t>(&here) - callee_sp;
    auto* room = static_cast<volatile char*>(__builtin_alloca(size));
    room[0] = here;
    callee(out);
    sink = room[0];
}
[[gnu::noinline]] void from_shallow(uintptr_t callee_sp, both_stacks& out) {
    with_callee_at(callee_sp, leaf<31>, out);
    sink = 11;
}
[[gnu::noinline]] void from_deep(uintptr_t callee_sp, both_stacks& out) {
    volatile char room[4096];
    room[0] = 0;
    with_callee_at(callee_sp, leaf<31>, out);
    sink = room[0];
}

TEST_F(eh_frame_unwinder_test, sees_a_changed_rbp_that_a_frame_takes_its_cfa_from) {
    volatile char mark = 0;
    // 16-byte steps from here, as the stack moves between calls.
    const uintptr_t callee_sp = (reinterpret_cast<uintptr_t>(&mark) - 16384) & ~uintptr_t{15};
    static void (*volatile const callers[])(uintptr_t, both_stacks&) = {
        from_shallow, from_deep, from_shallow, from_shallow, from_deep, from_deep, from_shallow};
    static both_stacks out;
    for (size_t i = 0; i < std::size(callers); ++i) {
        capture_window = 3;  // the leaf, with_callee_at and its caller
        out = both_stacks{};
        callers[i](callee_sp, out);
        capture_window = max_stack_depth;
        EXPECT_TRUE(out.walked) << "call " << i;
        EXPECT_EQ(out.eh_frame, out.libunwind) << "call " << i;
    }
    sink = mark;
}

// Frames of every kind between the leaf and the outer caller that changes.
[[gnu::noinline]] void deep_leaf(both_stacks& out) {
    next(7, out);
    sink = 8;
}

// A capture through an outer caller that asks for `window` frames.
struct windowed_call {
    outer_caller via;
    size_t window;
};

// Where the kept walk's innermost frame is the new one's but an outer caller changed, the frames
// inside the change are the kept walk's: a walk takes them from it and steps on from the changed
// frame. The stacks must still be libunwind's, in either order of the outer callers.
// Short captures among them leave kept walks of the inner frames and a few fresh ones only.
TEST_F(eh_frame_unwinder_test, takes_the_frames_inside_a_changed_caller_from_the_kept_walk) {
    constexpr auto a = outer<6>, b = outer<7>;
    static volatile const windowed_call calls[] = {
        {a, 256}, {b, 256}, {b, 256}, {a, 256}, {b, 12},  {a, 11}, {a, 256}, {b, 13},
        {b, 256}, {a, 12},  {b, 11},  {b, 256}, {a, 256}, {a, 14}, {b, 256}, {a, 256},
    };
    size_t i = 0;
#pragma GCC unroll 1
    for (const volatile windowed_call& c : calls) {
        capture_window = c.window;
        both_stacks out;
        sink = 0;  // the same run-time sized frames each time
        with_fixed_rbp(c.via, deep_leaf, out);
        capture_window = max_stack_depth;
        EXPECT_TRUE(out.walked) << "call " << i;
        EXPECT_EQ(out.eh_frame, out.libunwind) << "call " << i << ", window " << c.window;
        // The public capture, made after it, wants every frame.
        ASSERT_GE(out.public_eh_frame.size(), out.libunwind.size()) << "call " << i;
        EXPECT_TRUE(
            std::equal(out.libunwind.begin(), out.libunwind.end(), out.public_eh_frame.begin()))
            << "call " << i;
        ++i;
    }
}

// A walk stops at the frames its caller asks for, and of a kept walk checks only those: a short
// capture leaves a short kept walk, whose frames a later capture that wants more must not take
// for the whole stack, and outer frames that changed under a short capture must be seen by the
// next long one.
TEST_F(eh_frame_unwinder_test, short_walks_neither_cut_long_ones_short_nor_hide_changes) {
    constexpr auto a = outer<6>, b = outer<7>;
    static volatile const windowed_call calls[] = {
        {a, 1},   {a, 256}, {a, 2}, {b, 2},   {b, 256}, {a, 1}, {a, 256},
        {b, 256}, {b, 3},   {a, 3}, {a, 256}, {b, 1},   {b, 4}, {b, 256},
    };
    size_t i = 0;
#pragma GCC unroll 1
    for (const volatile windowed_call& c : calls) {
        capture_window = c.window;
        both_stacks out;
        with_fixed_rbp(c.via, leaf<3>, out);
        capture_window = max_stack_depth;
        EXPECT_TRUE(out.walked) << "call " << i;
        EXPECT_EQ(out.eh_frame, out.libunwind) << "call " << i << ", window " << c.window;
        EXPECT_GT(out.libunwind.size(), 0u);
        ++i;
    }
}

// From one call site, so that both see the same first return address.
[[gnu::noinline]] std::vector<uintptr_t> capture_with(unwinder method, size_t size, size_t skip) {
    std::vector<uintptr_t> out(size);
    out.resize(capture_stack(method, out, skip));
    return out;
}

// Call sites of their own: each instance's return address is one the walk has not met before.
// The sink is written after the call, so that it is no tail call; atomic, as two threads write it.
std::atomic<int> site_sink;
template <size_t N>
[[gnu::noinline]] void call_site(both_stacks& out, bool libunwind_too) {
    capture_both(out, false, libunwind_too);
    site_sink.store(static_cast<int>(N), std::memory_order_relaxed);
}
template <size_t... N>
constexpr auto call_sites(std::index_sequence<N...>) {
    return std::array<void (*)(both_stacks&, bool), sizeof...(N)>{&call_site<N>...};
}
// More than half of the rule table's first 4,096 slots, so that it grows at least once.
constexpr auto distinct_call_sites = call_sites(std::make_index_sequence<3000>());

TEST_F(eh_frame_unwinder_test, learns_more_return_addresses_than_its_first_table_holds) {
    // Another thread keeps walking from a few of the sites (each walk differs from the last in
    // its innermost frames, so it probes the table) while the table grows under it, published
    // whole with the old one still readable, and must keep getting the same stacks.
    constexpr size_t reader_sites = 8;
    std::atomic<bool> stop{false};
    std::atomic<size_t> reader_differences{0};
    std::atomic<bool> reader_walked{false};
    std::thread reader([&] {
        std::vector<std::vector<uintptr_t>> first(reader_sites);
        for (bool filled = false; !filled || !stop.load(); filled = true) {
            for (size_t site = 0; site < reader_sites; ++site) {
                both_stacks again;
                // One call site, so that the stacks can be the same; no libunwind on this thread.
                distinct_call_sites[site](again, false);
                if (filled) {
                    reader_differences += again.eh_frame != first[site];
                } else {
                    reader_differences += !again.walked;  // the walk fell back
                    first[site] = again.eh_frame;
                }
            }
            reader_walked = true;
        }
    });
    while (!reader_walked.load()) {
        std::this_thread::yield();
    }
    for (size_t site = 0; site < distinct_call_sites.size(); ++site) {
        both_stacks out;
        distinct_call_sites[site](out, true);
        ASSERT_TRUE(out.walked) << "the walk fell back on libunwind at site " << site;
        ASSERT_EQ(out.eh_frame, out.libunwind) << "at site " << site;
    }
    stop = true;
    reader.join();
    EXPECT_EQ(reader_differences.load(), 0u);
}

TEST_F(eh_frame_unwinder_test, stops_at_the_output_and_skips_like_libunwind) {
    for (size_t size : {1u, 5u, 64u}) {
        for (size_t skip : {0u, 1u, 3u}) {
            std::array<std::vector<uintptr_t>, 2> stacks;
            // One call site for both: not unrolled, so both return to the same address.
            static volatile int methods = 2;
#pragma GCC unroll 1
            for (int i = 0; i < methods; ++i) {
                stacks[i] =
                    capture_with(i == 0 ? unwinder::libunwind : unwinder::eh_frame, size, skip);
            }
            EXPECT_EQ(stacks[1], stacks[0]) << "size " << size << ", skip " << skip;
            // The test's own stack is deeper than 5 frames, shallower than 64.
            if (size < 64) {
                EXPECT_EQ(stacks[0].size(), size) << "size " << size << ", skip " << skip;
            }
        }
    }
}

// Through the C library's own frames (built without frame pointers): qsort calls back into
// this file from varying depths of its merge sort.
std::vector<both_stacks>* sorted_stacks = nullptr;

int compare_and_capture(const void* a, const void* b) {
    if (sorted_stacks->size() < 64) {
        capture_both(sorted_stacks->emplace_back());
    }
    return *static_cast<const int*>(a) - *static_cast<const int*>(b);
}

TEST_F(eh_frame_unwinder_test, gives_libunwinds_stacks_through_the_c_library) {
    std::vector<both_stacks> stacks;
    stacks.reserve(64);
    sorted_stacks = &stacks;
    std::array<int, 200> values{};
    for (size_t i = 0; i < values.size(); ++i) {
        values[i] = static_cast<int>((i * 7919) % 211);
    }
    std::qsort(values.data(), values.size(), sizeof(int), compare_and_capture);
    sorted_stacks = nullptr;
    ASSERT_FALSE(stacks.empty());
    for (const both_stacks& out : stacks) {
        EXPECT_TRUE(out.walked);
        EXPECT_EQ(out.eh_frame, out.libunwind);
        EXPECT_EQ(out.public_eh_frame, out.libunwind);
    }
}

// A signal handler's caller is the kernel's signal frame, whose rule is a DWARF expression:
// the walk leaves the whole capture to libunwind, and the stacks stay the same.
both_stacks* signal_stacks = nullptr;

void capture_in_handler(int) {
    capture_both(*signal_stacks);
}

TEST_F(eh_frame_unwinder_test, leaves_signal_frames_to_libunwind) {
    // A thread's first capture allocates its dynamic thread-local storage (glibc mallocs it in
    // __tls_get_addr, which is not async-signal-safe): capture once before the signal.
    both_stacks warm_up;
    capture_both(warm_up);
    both_stacks out;
    signal_stacks = &out;
    struct sigaction action = {};
    struct sigaction previous = {};
    action.sa_handler = capture_in_handler;
    sigemptyset(&action.sa_mask);
    ASSERT_EQ(sigaction(SIGUSR2, &action, &previous), 0);
    raise(SIGUSR2);
    sigaction(SIGUSR2, &previous, nullptr);
    signal_stacks = nullptr;
    EXPECT_FALSE(out.walked);
    EXPECT_GT(out.libunwind.size(), 3u);
    EXPECT_EQ(out.public_eh_frame, out.libunwind);
}

// Without the thread's stack bounds the walk cannot tell a stack word from any other memory, so
// it reads nothing and leaves the capture to libunwind (on a new thread: no walk kept yet).
[[gnu::noinline, gnu::optimize("no-omit-frame-pointer")]] bool walk_with_unknown_stack() {
    const auto* record = static_cast<const uintptr_t*>(__builtin_frame_address(0));
    std::array<uintptr_t, 8> out{};
    detail::walked_stack frames;
    const bool walked = detail::walk_eh_frame(
        {record[1], reinterpret_cast<uintptr_t>(record + 2), record[0]}, {}, 0, out, frames);
    asm volatile("");
    return walked;
}

TEST(eh_frame_unwinder_walk, refuses_a_thread_whose_stack_is_unknown) {
    bool walked = true;
    std::thread([&] { walked = walk_with_unknown_stack(); }).join();
    EXPECT_FALSE(walked);
}

TEST(eh_frame_unwinder_names, parse_and_print) {
    unwinder parsed{};
    ASSERT_TRUE(memtrail::recorder::parse_unwinder("eh_frame", parsed));
    EXPECT_EQ(parsed, unwinder::eh_frame);
    EXPECT_EQ(memtrail::recorder::unwinder_name(unwinder::eh_frame), "eh_frame");
}

}  // namespace
