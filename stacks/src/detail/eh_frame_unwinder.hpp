#pragma once
// The walk of the eh_frame unwinder: each return address's rule (eh_frame_rules.hpp) is read
// once and kept in a table keyed by the address, so a capture costs a table probe and two loads
// per frame. What the rules cannot describe is left to libunwind by the caller.

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

#include "memtrail/stacks/stack_capture.hpp"

namespace memtrail::recorder::detail {

// The registers the walk needs, in the frame of the first return address.
struct unwind_registers {
    uintptr_t pc = 0;  // a return address
    uintptr_t sp = 0;  // the stack pointer once that address was returned to (the callee's CFA)
    uintptr_t bp = 0;
};

struct stack_range {
    uintptr_t low = 0;
    uintptr_t high = 0;
};

// The calling thread's stack (both 0 when unknown); defined in stack_capture.cpp.
const stack_range& this_thread_stack();

// The id a stack was interned as, and the table, skip and limit (out.size() of the walk) it was
// interned under.
struct remembered_id {
    uint64_t table = 0;  // stack_table::serial(); 0: nothing remembered
    size_t skip = 0;
    size_t limit = 0;
    uint32_t id = 0;
};

// The stacks a kept walk gave, remembered with it. A capture that finds that walk whole and
// unchanged gives the same native stack again for the same table, skip and limit: its caller can
// take the id without interning the stack (hashing and comparing every frame). The same for the
// recent stacks of this walk with Python frames after it, when the capture reads the same Python
// words as one of them: many Python lines reach the same native stack (each call of a PyTorch
// function from Python code; in 3.11 and later a Python call adds no native frame), and a thread's
// Python frames are mostly those of one of its recent captures.
struct interned_walk {
    // Up to 32 Python frames: inside PyTorch training, 16 left about 2,200 captures a process
    // to the stack table (docs/performance.md, issue 17's eighth round).
    static constexpr size_t kept_python_words = 64;
    // Sixteen: a native stack reached from more Python lines than are kept sends every capture
    // to the stack table (hashing and comparing the whole stack), and four kept none of the
    // twelve lines of bench/stacks/production_bench.py's model.
    static constexpr size_t kept_python_stacks = 16;

    // A stack with Python frames: the id, and the Python words after the native frames.
    struct with_python_frames {
        remembered_id id;
        uint32_t word_count = 0;
        std::array<uintptr_t, kept_python_words> words;
    };

    remembered_id native;
    // Each stack's tag (python_words_tag of its words), apart from the stacks, so that finding
    // one reads a line and the stack it tags. 0: nothing kept there.
    std::array<uint32_t, kept_python_stacks> python_tags;
    std::array<with_python_frames, kept_python_stacks> with_python;
    uint32_t next_with_python = 0;  // the one a new stack with Python frames replaces

    // Asks for the lines a capture that finds its walk whole reads next: the native stack's id
    // and the tags of the stacks with Python frames.
    void prefetch() const {
        __builtin_prefetch(&native);
        __builtin_prefetch(python_tags.data());
    }

    // The id kept for the stack with Python words `words` after this walk's native frames,
    // interned in table `table` with `skip` and `limit`; 0 if none.
    uint32_t find_with_python(std::span<const uintptr_t> words, uint64_t table, size_t skip,
                              size_t limit) const;

    // Keeps `id` as the stack with `words` after the native frames, in place of the one kept
    // longest ago. Words beyond kept_python_words are not kept.
    void keep_with_python(std::span<const uintptr_t> words, const remembered_id& id);

    // Forgets every stack: the walk changed. A stack with Python frames is found by its tag only.
    void forget() {
        native.table = 0;
        python_tags.fill(0);
    }
};
static_assert(sizeof(interned_walk::python_tags) <= 64, "the tags are read on one line");

// A tag for Python words (never 0): four sums that rotate, then mixed, so that it costs a few
// cycles a word. Tags that agree only say which kept stack to compare in full.
inline uint32_t python_words_tag(std::span<const uintptr_t> words) {
    const auto rotate = [](uint64_t value) { return (value << 23) | (value >> 41); };
    uint64_t a = words.size();
    uint64_t b = 0x9e3779b97f4a7c15ull;
    uint64_t c = 0;
    uint64_t d = 0;
    size_t i = 0;
    for (; i + 4 <= words.size(); i += 4) {
        a = rotate(a + words[i]);
        b = rotate(b + words[i + 1]);
        c = rotate(c + words[i + 2]);
        d = rotate(d + words[i + 3]);
    }
    for (; i < words.size(); ++i) {
        a = rotate(a + words[i]);
    }
    uint64_t mixed = (a ^ rotate(b)) * 0xbf58476d1ce4e5b9ull + (c ^ rotate(rotate(d)));
    mixed = (mixed ^ (mixed >> 31)) * 0x94d049bb133111ebull;
    return static_cast<uint32_t>(mixed >> 32) | 1;
}

inline uint32_t interned_walk::find_with_python(std::span<const uintptr_t> words, uint64_t table,
                                                size_t skip, size_t limit) const {
    if (words.size() > kept_python_words) {
        return 0;
    }
    const uint32_t tag = python_words_tag(words);
    for (size_t i = 0; i < kept_python_stacks; ++i) {
        if (python_tags[i] != tag) {
            continue;
        }
        const with_python_frames& stack = with_python[i];
        if (stack.id.table == table && stack.id.skip == skip && stack.id.limit == limit &&
            stack.word_count == words.size() &&
            std::equal(words.begin(), words.end(), stack.words.begin())) {
            return stack.id.id;
        }
    }
    return 0;
}

inline void interned_walk::keep_with_python(std::span<const uintptr_t> words,
                                            const remembered_id& id) {
    if (words.empty() || words.size() > kept_python_words) {
        return;
    }
    const uint32_t slot = next_with_python;
    next_with_python = (slot + 1) % kept_python_stacks;
    with_python[slot].id = id;
    with_python[slot].word_count = static_cast<uint32_t>(words.size());
    std::copy(words.begin(), words.end(), with_python[slot].words.begin());
    python_tags[slot] = python_words_tag(words);
}

// A walk's stack, and what the kept walk it ended in remembers of the stacks interned from it.
struct walked_stack {
    // The return addresses, innermost first: a view of the thread's kept walk, valid until the
    // thread's next walk (most captures then need no copy: their stack's id is remembered), or
    // of the caller's `out`, for a stack deeper than a kept walk holds.
    std::span<const uintptr_t> frames;
    interned_walk* remembered = nullptr;  // nullptr: the walk ended in no kept walk
    // The walk was its kept walk unchanged: an id that walk remembers for this capture's table,
    // skip and limit is this stack's.
    bool whole = false;
    uint64_t number = 0;  // the thread's walks so far, this one included (0: no kept walks)
};

// The calling thread's walks so far: a walked_stack's view and what it remembers stand while
// this is its `number`.
uint64_t this_threads_walk_number();

// Walks up to out.size() return addresses from `start` outwards, after leaving out `skip`, and
// sets `walked` (its frames lie in `out` or in the thread's kept walk). False when a frame on the
// way has no rule this walk can follow or would read outside `stack`: the caller then asks
// libunwind for the whole stack.
bool walk_eh_frame(unwind_registers start, stack_range stack, size_t skip, std::span<uintptr_t> out,
                   walked_stack& walked);

// capture_stack for the recorder, without the copy: the frames are the eh_frame walk's as it was
// kept (with what it remembers of them), or written to `out` (the other unwinders, and what
// eh_frame leaves to libunwind). Defined in stack_capture.cpp, out of line as capture_stack is.
walked_stack capture_walked_stack(unwinder method, std::span<uintptr_t> out, size_t skip);

}  // namespace memtrail::recorder::detail
