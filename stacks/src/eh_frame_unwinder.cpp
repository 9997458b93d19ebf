// The eh_frame walk: each step's rule from the table of rules by return address
// (eh_frame_rule_table.hpp), each thread's recent walks kept and reused where they still hold.
//
// Index of this file:
// [SECTION] reading the stack
// [SECTION] one step
// [SECTION] kept walks
// [SECTION] the thread's walk memory
// [SECTION] the walk

#include "detail/eh_frame_unwinder.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <cstring>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "detail/eh_frame_rule_table.hpp"
#include "memtrail/stacks/cost_counters.hpp"
#include "memtrail/stacks/huge_pages.hpp"
#include "memtrail/stacks/stack_capture.hpp"

namespace memtrail::recorder::detail {

namespace {

//-------------------------------------------------------------------------------------------------
// [SECTION] reading the stack
//-------------------------------------------------------------------------------------------------

// The walk reads words of the live stack wherever its rules or a kept walk point: some lie in
// other frames' locals, which AddressSanitizer poisons (an alloca's red zones), though every one
// is mapped stack memory above the stack pointer. Those reads are not instrumented, as
// libunwind's are not.
#define MEMTRAIL_READS_THE_STACK [[gnu::no_sanitize_address]]
// Inlined where nothing is instrumented: inlined into an instrumented walk, a check would be
// instrumented too.
#if defined(__SANITIZE_ADDRESS__)
#define MEMTRAIL_INLINE_UNLESS_INSTRUMENTED
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define MEMTRAIL_INLINE_UNLESS_INSTRUMENTED
#endif
#endif
#ifndef MEMTRAIL_INLINE_UNLESS_INSTRUMENTED
#define MEMTRAIL_INLINE_UNLESS_INSTRUMENTED [[gnu::always_inline]]
#endif

// Reads a word of the thread's stack at or above the stack pointer; false outside it, and
// always when the thread's stack is unknown (both bounds 0).
MEMTRAIL_READS_THE_STACK bool read_stack_word(stack_range stack, uintptr_t sp, uintptr_t address,
                                              uintptr_t& value) {
    if (stack.high < sizeof(uintptr_t) || address < sp ||
        address > stack.high - sizeof(uintptr_t) || address % alignof(uintptr_t) != 0) {
        return false;
    }
    value = *reinterpret_cast<const uintptr_t*>(address);
    return true;
}

// A stack word a walk depends on, and what it held when read. The walk is a function of the
// registers it starts from and of the words it reads, so steps whose words still hold what they
// read then would give the same callers again.
struct checked_word {
    const uintptr_t* slot;
    uintptr_t value;
};

// Whether a word of [first, last) has changed since it was read. No branch per word: the loads
// do not wait on each other, and four chains of or do not wait on each other either.
MEMTRAIL_READS_THE_STACK MEMTRAIL_INLINE_UNLESS_INSTRUMENTED inline bool any_changed(
    const checked_word* first, const checked_word* last) {
    uintptr_t changed = 0;
    uintptr_t changed_1 = 0;
    uintptr_t changed_2 = 0;
    uintptr_t changed_3 = 0;
    for (; last - first >= 4; first += 4) {
        changed |= *first[0].slot ^ first[0].value;
        changed_1 |= *first[1].slot ^ first[1].value;
        changed_2 |= *first[2].slot ^ first[2].value;
        changed_3 |= *first[3].slot ^ first[3].value;
    }
    for (; first != last; ++first) {
        changed |= *first->slot ^ first->value;
    }
    return (changed | changed_1 | changed_2 | changed_3) != 0;
}

// The same, innermost words first, a few lines at a time: a kept walk that is not the stack
// any more usually differs near its innermost frames (another caller of the same place), and
// its outer words need not be read at all.
MEMTRAIL_READS_THE_STACK MEMTRAIL_INLINE_UNLESS_INSTRUMENTED inline bool any_changed_from_inside(
    const checked_word* first, const checked_word* last) {
    constexpr ptrdiff_t run = 8;
    for (; last - first > run; last -= run) {
        if (any_changed(last - run, last)) {
            return true;
        }
    }
    return any_changed(first, last);
}

//-------------------------------------------------------------------------------------------------
// [SECTION] one step
//-------------------------------------------------------------------------------------------------

// The words a step read: the return address and, where the rule says, the caller's saved rbp.
struct step_words {
    const uintptr_t* return_address_slot;  // nullptr: none read (the outermost frame)
    uintptr_t return_address;
    const uintptr_t* saved_bp_slot;  // nullptr: the rule leaves rbp as it is
    uintptr_t saved_bp;
};

// One step of a walk: the registers on entering its frame (its return address is kept apart),
// what its rule does with rbp, and the words it read.
struct step_reads {
    uintptr_t sp;
    uintptr_t bp;
    bool cfa_from_bp;
    step_words words;
};

enum class step_result { caller, outermost, unsupported };

// Steps from the frame `registers` describe to its caller, noting what it read in `step`.
step_result step_out(const rule_table::view& table, stack_range stack, unwind_registers& registers,
                     step_reads& step) {
    step.sp = registers.sp;
    step.bp = registers.bp;
    step.words.return_address_slot = nullptr;
    step.words.saved_bp_slot = nullptr;
    const uint64_t rule = table.lookup(registers.pc);
    step.cfa_from_bp = (rule & packed_cfa_from_rbp) != 0;
    if (rule & packed_unsupported) {
        return step_result::unsupported;
    }
    if (rule & packed_outermost) {
        return step_result::outermost;
    }
    const auto cfa_offset = static_cast<int32_t>(static_cast<uint32_t>(rule >> 32));
    const uintptr_t cfa = ((rule & packed_cfa_from_rbp) ? registers.bp : registers.sp) +
                          static_cast<uintptr_t>(int64_t{cfa_offset});
    const uintptr_t return_address_slot = cfa - sizeof(uintptr_t);
    uintptr_t return_address = 0;
    if (!read_stack_word(stack, registers.sp, return_address_slot, return_address)) {
        return step_result::unsupported;
    }
    step.words.return_address_slot = reinterpret_cast<const uintptr_t*>(return_address_slot);
    step.words.return_address = return_address;
    if (rule & packed_rbp_saved) {
        const auto rbp_offset = static_cast<int16_t>(static_cast<uint16_t>(rule >> 16));
        const uintptr_t saved_bp_slot = cfa + static_cast<uintptr_t>(int64_t{rbp_offset});
        if (!read_stack_word(stack, registers.sp, saved_bp_slot, registers.bp)) {
            return step_result::unsupported;
        }
        step.words.saved_bp_slot = reinterpret_cast<const uintptr_t*>(saved_bp_slot);
        step.words.saved_bp = registers.bp;
    }
    registers.sp = cfa;
    registers.pc = return_address;
    // The outermost frame may also end the chain with a null return address.
    return return_address == 0 ? step_result::outermost : step_result::caller;
}

//-------------------------------------------------------------------------------------------------
// [SECTION] kept walks
//-------------------------------------------------------------------------------------------------

// A frame of a kept walk: the registers on entering it, where the words checked for it and the
// frames outside it end in kept_walk::checks, what its rule does with rbp, and whether its rbp on
// entry matters: used as its CFA, or passed on unsaved to a caller's that is (a walk that does
// not reach the outermost frame counts its rbp as used out there). What its step read is kept
// apart (kept_walk::words): a walk compares registers frame by frame, and reads those words only
// when it changes the walk.
struct kept_frame {
    uintptr_t sp;
    uintptr_t bp;
    uint32_t checks_end;
    bool cfa_from_bp;
    bool bp_used;
};

// The most frames a kept walk holds: room for the default window (64 frames and the recorder's
// own) and more, but not for the deepest a capture may ask for, so that a thread keeps more
// walks in less memory. A walk that goes deeper is walked frame by frame.
constexpr size_t kept_walk_frames = 96;

// What choosing a kept walk reads of it (walk_memory::heads), apart from the walk itself: its
// innermost frame, where the words checked for that frame lie in kept_walk::checks, and how it
// was last used. Inside training these lines are cold at every capture (PyTorch's work in
// between takes the caches), so choosing waits for the tags, then for the heads and the walks'
// first checks together, instead of a chain of each walk's own lines. Two a line.
struct alignas(32) kept_walk_head {
    unwind_registers innermost;  // its registers on entry
    uint8_t count;               // the walk's frames
    uint8_t innermost_checks;    // checks_of(count - 1), from checks.data()
    uint8_t checks_end;          // checks_end(count - 1)
    uint8_t complete : 1;        // kept_walk::complete
    uint8_t bp_used : 1;         // the innermost frame's rbp on entry matters
    // Of the walks with this innermost frame (at most two), it was the last used, and it was
    // the time before too: walk_memory::choose() guesses which of two to check first.
    uint8_t last_of_place : 1;
    uint8_t repeats : 1;
    uint32_t used_at;  // walk_memory::walks when it was last used (its low bits)
};
static_assert(sizeof(kept_walk_head) == 32, "two heads a line");

// A complete walk of the calling thread, kept for the next ones. Consecutive captures share
// most of their outer frames: where a new walk reaches a frame of a kept one with the same
// registers, and every word the kept walk depends on from there out still holds, the rest is the
// kept walk's, checked with loads that do not wait on each other instead of a chain of table
// lookups.
struct kept_walk {
    uint32_t count;  // frames
    bool complete;   // frames[0] is the stack's outermost, not only the last one a window needed
    std::array<kept_frame, kept_walk_frames> frames;  // outermost first
    std::array<step_words, kept_walk_frames> words;   // what frames[i]'s step read
    // The words that frames' steps read and that the walk depends on, outermost first: each
    // return address, and a saved rbp only where a frame out to the next one saved uses it as
    // its CFA. Code built without frame pointers keeps any value in rbp, and such a word changes
    // from call to call without changing the callers. Dense, so that a check reads the fewest
    // lines.
    std::array<checked_word, 2 * kept_walk_frames> checks;
    // frames[i]'s return address at pcs[kept_walk_frames - 1 - i]: a stack, innermost first, is
    // one run of it.
    std::array<uintptr_t, kept_walk_frames> pcs;
    interned_walk interned;  // forgotten whenever the walk changes

    const checked_word* checks_of(size_t frame) const {
        return checks.data() + (frame == 0 ? 0 : frames[frame - 1].checks_end);
    }
    const checked_word* checks_end(size_t frame) const {
        return checks.data() + frames[frame].checks_end;
    }
    uintptr_t pc(size_t frame) const { return pcs[kept_walk_frames - 1 - frame]; }

    // Whether frame `frame` has the registers `registers` (rbp where it matters), the same
    // return address, and whether its step would read the same words.
    bool same_registers(size_t frame, const unwind_registers& registers) const {
        const kept_frame& kept = frames[frame];
        return kept.sp == registers.sp && pc(frame) == registers.pc &&
               (!kept.bp_used || kept.bp == registers.bp);
    }

    // Sets what `head` says of the walk, once its innermost frame is `innermost` (how it was
    // used is the caller's).
    void describe_in(kept_walk_head& head, const unwind_registers& innermost) const {
        static_assert(kept_walk_frames <= UINT8_MAX && 2 * kept_walk_frames <= UINT8_MAX);
        const size_t last = count - 1;  // no empty walks
        head.innermost = innermost;
        head.count = static_cast<uint8_t>(count);
        head.innermost_checks = static_cast<uint8_t>(checks_of(last) - checks.data());
        head.checks_end = static_cast<uint8_t>(frames[last].checks_end);
        head.complete = complete;
        head.bp_used = frames[last].bp_used;
    }

    // Whether the walk, with head `head`, has `start`'s innermost frame: the same registers, and
    // the words that frame's step read unchanged. Reads only the head and those checks.
    bool innermost_is(const kept_walk_head& head, const unwind_registers& start) const {
        return head.innermost.sp == start.sp && head.innermost.pc == start.pc &&
               (!head.bp_used || head.innermost.bp == start.bp) &&
               !any_changed(checks.data() + head.innermost_checks, checks.data() + head.checks_end);
    }

    // Whether the walk, with `start`'s innermost frame, is the walk from `start` whole: long
    // enough for `window` frames, and every word that the frames in the window depend on
    // unchanged. Inside the window, only the head and the checks are read.
    bool holds_out_to(const kept_walk_head& head, size_t window) const {
        if (!head.complete && head.count < window) {
            return false;  // it stopped at a shorter window
        }
        const checked_word* outermost_needed =
            head.count <= window ? checks.data() : checks_of(head.count - window);
        return !any_changed_from_inside(outermost_needed, checks.data() + head.innermost_checks);
    }

    // Asks for the lines of the words most walks check, and for what the capture reads of the
    // walk once found whole, ahead of reading them: each is a line missed at every capture
    // inside training, and asked for together they are waited for once.
    void prefetch_for_choosing() const {
        constexpr size_t lines = 8;  // 32 words: inside training, a walk checks about 31
        const auto* first = reinterpret_cast<const char*>(checks.data());
#pragma GCC unroll 8
        for (size_t line = 0; line < lines; ++line) {
            __builtin_prefetch(first + 64 * line);
        }
        interned.prefetch();
    }

    // Where rbp matters and the words checked, from frame `from` in (the frames outside it are
    // as they were marked): a step's saved rbp is its caller's rbp on entry.
    void check_from(size_t from) {
        bool outer_used =
            from > 0 ? frames[from - 1].bp_used : !complete;  // frames past the walk may use it
        uint32_t end = from > 0 ? frames[from - 1].checks_end : 0;
        for (size_t i = from; i < count; ++i) {
            kept_frame& frame = frames[i];
            const step_words& read = words[i];
            if (read.return_address_slot != nullptr) {
                checks[end++] = {read.return_address_slot, read.return_address};
            }
            if (read.saved_bp_slot != nullptr && outer_used) {
                checks[end++] = {read.saved_bp_slot, read.saved_bp};
            }
            frame.checks_end = end;
            frame.bp_used = frame.cfa_from_bp || (read.saved_bp_slot == nullptr && outer_used);
            outer_used = frame.bp_used;
        }
    }

    // Makes frames [0, shared) those of `other`, as keep() then keeps them.
    void take_outer_frames(const kept_walk& other, size_t shared) {
        if (shared == 0) {
            return;
        }
        complete = other.complete;
        std::copy_n(other.frames.begin(), shared, frames.begin());
        std::copy_n(other.words.begin(), shared, words.begin());
        std::copy_n(other.checks.begin(), other.frames[shared - 1].checks_end, checks.begin());
        const auto first_pc = static_cast<ptrdiff_t>(kept_walk_frames - shared);
        std::copy_n(other.pcs.begin() + first_pc, shared, pcs.begin() + first_pc);
    }

    // Keeps frames [0, shared), puts `fresh` (innermost first) after them, and the frames
    // [inner_from, inner_from + inner_count) of `inner` after those: the innermost ones, which
    // a walk took unchanged from the walk it was compared with (this one or another).
    void keep(size_t shared, const step_reads* fresh, const uintptr_t* fresh_pcs,
              size_t fresh_count, bool fresh_reached_outermost, const kept_walk& inner,
              size_t inner_from, size_t inner_count) {
        complete = shared > 0 ? complete : fresh_reached_outermost;
        const size_t moved_to = shared + fresh_count;
        if (inner_count > 0) {
            // Moved first: the fresh frames may go where they were.
            std::memmove(&frames[moved_to], &inner.frames[inner_from],
                         inner_count * sizeof(kept_frame));
            std::memmove(&words[moved_to], &inner.words[inner_from],
                         inner_count * sizeof(step_words));
            std::memmove(&pcs[kept_walk_frames - moved_to - inner_count],
                         &inner.pcs[kept_walk_frames - inner_from - inner_count],
                         inner_count * sizeof(uintptr_t));
        }
        for (size_t i = 0; i < fresh_count; ++i) {
            const step_reads& step = fresh[fresh_count - 1 - i];
            frames[shared + i] = {step.sp, step.bp, 0, step.cfa_from_bp, false};
            words[shared + i] = step.words;
        }
        std::copy_n(fresh_pcs, fresh_count,
                    pcs.begin() + static_cast<ptrdiff_t>(kept_walk_frames - moved_to));
        count = static_cast<uint32_t>(moved_to + inner_count);
        check_from(shared);
        interned.forget();
    }
};

//-------------------------------------------------------------------------------------------------
// [SECTION] the thread's walk memory
//-------------------------------------------------------------------------------------------------

// The calling thread's kept walks, and room for a walk under way. Several, because a thread's
// allocations and frees come from different places, and the same place is reached again at the
// same depth from other callers (PyTorch's operators between one layer and the next): each
// finds its own walk whole, or the most of it. Sixty-four: inside PyTorch training a walk then
// steps 1.0 frames instead of 1.7 with thirty-two, 4.9 with sixteen and 7.7 with eight, and the
// walk's time an event fell by a tenth from thirty-two (docs/performance.md), for about 1.1 MiB
// a thread (725 KiB before each kept sixteen stacks with Python frames instead of four), touched
// as it is used. Each thread's is on huge pages (this_threads_block): besides the stack it is most
// of what a walk reads.
constexpr size_t kept_walk_count = 64;

// A kept walk's innermost frame in four bytes. Choosing a walk compares the tags of all of them,
// four lines, instead of reading their registers most recent first: inside training the walk
// found was the ninth read, on average, each on a line of its own (docs/performance.md).
uint32_t innermost_tag(const unwind_registers& frame) {
    return static_cast<uint32_t>(((frame.pc ^ (frame.sp << 16)) * 0x9E3779B97F4A7C15ull) >> 32);
}

static_assert(kept_walk_count <= 64, "a walk's tags are matched into one 64-bit mask");

// Bit i set where the i-th of the first `count` tags is `tag`.
uint64_t matching_tags(const std::array<uint32_t, kept_walk_count>& tags, uint32_t tag,
                       uint32_t count) {
    uint64_t matches = 0;
#if defined(__SSE2__)
    static_assert(kept_walk_count % 4 == 0);
    const __m128i wanted = _mm_set1_epi32(static_cast<int>(tag));
    for (uint32_t i = 0; i < count; i += 4) {
        const __m128i four = _mm_loadu_si128(reinterpret_cast<const __m128i*>(&tags[i]));
        const auto equal = _mm_castsi128_ps(_mm_cmpeq_epi32(four, wanted));
        matches |= static_cast<uint64_t>(_mm_movemask_ps(equal)) << i;
    }
#else
    for (uint32_t i = 0; i < count; ++i) {
        matches |= uint64_t{tags[i] == tag} << i;
    }
#endif
    return count >= 64 ? matches : matches & ((uint64_t{1} << count) - 1);
}

// How a walk met the kept walks: one of them whole, one with its innermost frame but changed
// further out (its frames inside the first change are this walk's), or none with its innermost
// frame.
enum class walk_match { whole, changed_outside_innermost, other };

struct walk_memory {
    std::array<kept_walk, kept_walk_count> kept;
    // Apart from the walks, so that choosing one reads a few lines: each kept walk's innermost
    // frame's tag and head, and the walks in use (kept[0, in_use)), most recently used first.
    std::array<uint32_t, kept_walk_count> innermost_tags;
    std::array<kept_walk_head, kept_walk_count> heads;
    std::array<uint8_t, kept_walk_count> by_recency;
    uint32_t in_use;
    // The walk under way, innermost first, until it meets the kept one.
    std::array<step_reads, kept_walk_frames> fresh;
    std::array<uintptr_t, kept_walk_frames> fresh_pcs;
    uint64_t walks;  // so far

    // The kept walk to compare a walk from `start` with, and the one that keeps the result. The
    // same place is reached from several callers in turn (an operator's allocation from each
    // layer), so up to two walks may share `start`'s innermost frame, and the one whose every
    // word the window depends on holds is this walk whole. Which of the two to check first is
    // guessed from the last captures of the place: the one used last, if it was used the time
    // before too (one caller again), else the other (callers taking turns). Else the more recent
    // of them is compared (its frames inside the change are this walk's) and the result
    // replaces the less recent of two, or goes beside the one. With none, the most recent walk
    // is compared, whose outer frames are the likeliest to be this one's, and the result goes to
    // a walk not in use yet or the least recent. Inside PyTorch training two walks a place find
    // 80% of walks whole against 56% with one (docs/performance.md, issue 17's eighth round).
    walk_match choose(const unwind_registers& start, size_t window, kept_walk*& compared,
                      kept_walk*& kept_as) {
        const uint64_t candidates = matching_tags(innermost_tags, innermost_tag(start), in_use);
        for (uint64_t c = candidates; c != 0; c &= c - 1) {
            kept[static_cast<size_t>(std::countr_zero(c))].prefetch_for_choosing();
        }
        std::array<size_t, 2> place{};
        size_t found = 0;
        for (uint64_t c = candidates; c != 0 && found < place.size(); c &= c - 1) {
            const auto i = static_cast<size_t>(std::countr_zero(c));
            if (kept[i].innermost_is(heads[i], start)) {
                place[found++] = i;
            }
        }
        if (found == 2) {
            const bool first_is_last = heads[place[0]].last_of_place;
            if (heads[first_is_last ? place[0] : place[1]].repeats != first_is_last) {
                std::swap(place[0], place[1]);
            }
        }
        for (size_t k = 0; k < found; ++k) {
            const size_t i = place[k];
            if (kept[i].holds_out_to(heads[i], window)) {
                compared = kept_as = &kept[i];
                heads[i].repeats = heads[i].last_of_place;
                heads[i].last_of_place = true;
                if (found == 2) {
                    heads[place[1 - k]].last_of_place = false;
                }
                return walk_match::whole;
            }
        }
        size_t replaced = in_use < kept_walk_count ? in_use : by_recency[kept_walk_count - 1];
        if (found > 0) {
            // Told apart by the low bits of the walks' numbers: wrong only for a walk unused
            // for two billion walks, which then is merely compared first.
            const bool first_is_recent =
                found == 1 ||
                static_cast<int32_t>(heads[place[0]].used_at - heads[place[1]].used_at) >= 0;
            compared = &kept[first_is_recent ? place[0] : place[1]];
            for (size_t k = 0; k < found; ++k) {
                heads[place[k]].last_of_place = false;
            }
            if (found == 2) {
                replaced = first_is_recent ? place[1] : place[0];
            }
        } else {
            compared = &kept[by_recency[0]];  // kept[0], unused, when none is in use
        }
        kept_as = &kept[replaced];
        heads[replaced].last_of_place = true;  // a new walk of the place
        heads[replaced].repeats = false;
        return found > 0 ? walk_match::changed_outside_innermost : walk_match::other;
    }

    // Gives the frames of `walk`, the walk from `start` (`whole`: as it was kept, head and all),
    // as a view of its return addresses, and notes that it was used last.
    bool give(kept_walk& walk, const unwind_registers& start, bool whole, size_t skip, size_t limit,
              walked_stack& walked) {
        const auto i = static_cast<size_t>(&walk - kept.data());
        kept_walk_head& head = heads[i];
        if (!whole) {
            walk.describe_in(head, start);
            innermost_tags[i] = innermost_tag(start);
        }
        head.used_at = static_cast<uint32_t>(walks);
        used(i);
        const size_t total = head.count;
        const size_t count = skip < total ? std::min(total - skip, limit) : 0;
        walked = {{walk.pcs.data() + (kept_walk_frames - total + skip), count},
                  &walk.interned,
                  whole,
                  walks};
        return true;
    }

    // Notes that kept[i] was used by the last walk.
    void used(size_t i) {
        if (in_use > 0 && by_recency[0] == i) {
            return;  // most recent already
        }
        uint32_t rank = 0;
        while (rank < in_use && by_recency[rank] != i) {
            ++rank;
        }
        if (rank == in_use) {
            ++in_use;  // a walk not in use before: kept_as took the next one
        }
        for (; rank > 0; --rank) {
            by_recency[rank] = by_recency[rank - 1];
        }
        by_recency[0] = static_cast<uint8_t>(i);
    }
};

//-------------------------------------------------------------------------------------------------
// [SECTION] the walk
//-------------------------------------------------------------------------------------------------

// The rbp on entering frame `frame` of `walk`, read again: the saved rbp of the nearest frame
// inside it that saves one (the words that a walk does not check may have changed), else the
// walk's first rbp.
MEMTRAIL_READS_THE_STACK uintptr_t bp_entering(const kept_walk& walk, size_t frame,
                                               uintptr_t innermost_bp) {
    for (size_t inside = frame + 1; inside < walk.count; ++inside) {
        if (const uintptr_t* slot = walk.words[inside].saved_bp_slot) {
            return *slot;
        }
    }
    return innermost_bp;
}

// The walk without the memory, written to `out`: for stacks deeper than it keeps.
bool walk_each_frame(unwind_registers registers, stack_range stack, size_t skip,
                     std::span<uintptr_t> out, walked_stack& walked) {
    size_t written = 0;
    const auto done = [&](bool walked_out) {
        walked = {out.first(written), nullptr, false};
        return walked_out;
    };
    const rule_table::view table(rules());
    step_reads step;
    for (size_t frame = 0; written < out.size(); ++frame) {
        if (frame >= skip) {
            out[written++] = registers.pc;
        }
        switch (step_out(table, stack, registers, step)) {
            case step_result::unsupported:
                return done(false);
            case step_result::outermost:
                return done(true);
            case step_result::caller:
                break;
        }
    }
    return done(true);
}

}  // namespace

bool walk_eh_frame(unwind_registers start, stack_range stack, size_t skip, std::span<uintptr_t> out,
                   walked_stack& walked) {
    walk_memory* const kept_walks = this_threads_block<walk_memory>();
    if (kept_walks == nullptr) {
        return walk_each_frame(start, stack, skip, out, walked);  // the thread is exiting
    }
    walk_memory& memory = *kept_walks;
    ++memory.walks;
    if (out.empty()) {
        walked = {};
        return true;  // nothing to give: no walk, and no kept walk taken or changed
    }
    // Only the innermost `window` frames are written out: a walk stops there, and of a kept walk
    // it meets only the frames that reach into the window are checked. Frames beyond it are
    // never written, so they need neither a step nor a check; a kept walk's frames past any
    // window may be stale, and are trusted only once a later walk has checked them.
    const size_t window = skip + out.size();
    kept_walk* compared = nullptr;
    kept_walk* kept_as = nullptr;
    const walk_match match = cost::timed(
        cost::counter::choose, [&] { return memory.choose(start, window, compared, kept_as); });
    cost::add(cost::counter::choose_hit, match != walk_match::other ? 1 : 0);
    if (match == walk_match::whole) {
        cost::add(cost::counter::walks, 1);
        cost::add(cost::counter::walk_whole, 1);
        cost::add(cost::counter::shared, compared->count);
        return memory.give(*compared, start, true, skip, out.size(), walked);
    }
    const kept_walk& kept = *compared;
    const rule_table::view table(rules());
    unwind_registers registers = start;
    size_t fresh_count = 0;
    size_t shared = 0;  // frames of the kept walk that this one ends with
    // Innermost frames of the kept walk that this one starts with, from inner_from inwards:
    // where the kept walk's innermost frame is this one's but a word it read out has changed,
    // the frames inside the first change are the same, and the walk steps on from there.
    size_t inner_count = 0;
    size_t inner_from = 0;
    // The kept walk's frames [0, candidate) lie at or above the current stack pointer; only
    // those below `first_changed` can still match (a word that changed under a frame changes
    // every match above it).
    size_t candidate = kept.count;
    size_t first_changed = kept.count;
    bool reached_outermost = false;
    const cost::stopwatch stepping;
    for (;;) {
        while (candidate > 0 && kept.frames[candidate - 1].sp < registers.sp) {
            --candidate;
        }
        // A kept walk that stopped at its own window may end too soon for this one.
        if (candidate > 0 && candidate <= first_changed &&
            (kept.complete || candidate + inner_count + fresh_count >= window) &&
            kept.same_registers(candidate - 1, registers)) {
            // The innermost frame first: it is the one that changes when a function is called
            // from another place at the same depth. Then the frames the window reaches: frame
            // candidate - 1 - k is written when fresh_count + k < window, and its address was
            // read by the step of the frame inside it.
            const checked_word* innermost = kept.checks_of(candidate - 1);
            const size_t known = inner_count + fresh_count;
            const size_t reached = std::min(candidate, window - std::min(window, known));
            const checked_word* outermost_needed =
                kept.checks_of(candidate - std::max<size_t>(reached, 1));
            // choose() found the walk with `start`'s innermost frame changed further out.
            const bool known_changed = match == walk_match::changed_outside_innermost &&
                                       fresh_count == 0 && candidate == kept.count;
            if (!known_changed && !any_changed(innermost, kept.checks_end(candidate - 1)) &&
                !any_changed(outermost_needed, innermost)) {
                shared = candidate;
                break;
            }
            // Find the innermost change, above which nothing can match.
            size_t changed = candidate - 1;
            while (!any_changed(kept.checks_of(changed), kept.checks_end(changed))) {
                --changed;
            }
            first_changed = changed;
            if (known_changed && changed + 1 < kept.count) {
                // Frames changed + 1 and inwards read what they read then: they and frame
                // `changed` itself are the same, and only its step must be taken again.
                inner_from = changed + 1;
                inner_count = kept.count - inner_from;
                registers = {kept.pc(changed), kept.frames[changed].sp,
                             bp_entering(kept, changed, start.bp)};
            }
        }
        if (inner_count + fresh_count >= window) {
            break;  // every frame written out is known
        }
        if (fresh_count == kept_walk_frames) {
            cost::add(cost::counter::fallback, 1);
            return walk_each_frame(start, stack, skip, out, walked);  // deeper than kept
        }
        memory.fresh_pcs[fresh_count] = registers.pc;
        const step_result result = step_out(table, stack, registers, memory.fresh[fresh_count++]);
        if (result == step_result::unsupported) {
            return false;
        }
        if (result == step_result::outermost) {
            reached_outermost = true;
            break;
        }
    }
    if (shared + fresh_count + inner_count > kept_walk_frames) {
        return walk_each_frame(start, stack, skip, out, walked);
    }
    cost::add_stepped_walk(stepping.ticks(), fresh_count, shared);
    const cost::zone keeping(cost::counter::keep);
    if (fresh_count == 0) {
        return memory.give(*compared, start, true, skip, out.size(), walked);
    }
    if (kept_as != compared) {
        kept_as->take_outer_frames(*compared, shared);
    }
    kept_as->keep(shared, memory.fresh.data(), memory.fresh_pcs.data(), fresh_count,
                  reached_outermost, *compared, inner_from, inner_count);
    return memory.give(*kept_as, start, false, skip, out.size(), walked);
}

uint64_t this_threads_walk_number() {
    const walk_memory* const memory = this_threads_block<walk_memory>();
    return memory != nullptr ? memory->walks : 0;
}

}  // namespace memtrail::recorder::detail
