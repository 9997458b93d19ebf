// capture_stack(table, options, skip): a captured stack interned, with what the eh_frame walk
// remembers of the ids it gave (a repeated walk takes its id without hashing the stack again).

#include "memtrail/stacks/interned_capture.hpp"

#include <algorithm>
#include <array>
#include <optional>
#include <span>

#include "detail/eh_frame_unwinder.hpp"
#include "detail/python_stack.hpp"
#include "memtrail/stacks/cost_counters.hpp"

namespace memtrail::recorder {

namespace {

// What the eh_frame walk that gave a capture's native frames remembers of the stacks it gave
// before: a capture that finds its thread's kept walk unchanged (`whole`) takes the id that walk's
// stack was interned as last time, for the same table, skip and limit (the most native frames
// asked for), instead of hashing and comparing the stack again.
struct remembered_stacks {
    detail::interned_walk* walk = nullptr;  // nullptr: another unwinder, or the walk kept nothing
    bool whole = false;
    size_t skip = 0;
    size_t limit = 0;
    uint64_t walk_number = 0;  // the thread's walk that gave the capture's stack

    // What the kept walk of a capture that asked for `limit` frames after `skip` remembers.
    static remembered_stacks of(const detail::walked_stack& walked, size_t skip, size_t limit) {
        return {walked.remembered, walked.whole, skip, limit, walked.number};
    }

    // Forgets the kept walk if the thread walked again since: Python code run meanwhile (a
    // collection's finalizers while the API reads frames) can free a tensor, whose capture
    // changes the kept walks, and what the walk remembers would be another stack's.
    void forget_if_walked_since() {
        if (walk != nullptr && detail::this_threads_walk_number() != walk_number) {
            walk = nullptr;
        }
    }

    // The id of the native stack `frames`, interned or remembered.
    stack_id intern_native(stack_table& stacks, std::span<const uintptr_t> frames) const {
        if (walk != nullptr && whole && holds(walk->native, stacks)) {
            cost::add(cost::counter::whole, 1);
            return walk->native.id;
        }
        const cost::zone timing(cost::counter::intern_native);
        const stack_id id = stacks.intern(frames);
        if (walk != nullptr && id != no_stack) {
            walk->native = {stacks.serial(), skip, limit, id};
        }
        return id;
    }

    // The id remembered for the native stack with `python_words` after it; no_stack if none.
    stack_id with_python(const stack_table& stacks, std::span<const uintptr_t> python_words) const {
        if (walk == nullptr || !whole) {
            return no_stack;
        }
        return walk->find_with_python(python_words, stacks.serial(), skip, limit);
    }

    // Remembers `id` as the native stack with `python_words` after it, in place of the one
    // remembered longest ago.
    void remember_with_python(const stack_table& stacks, std::span<const uintptr_t> python_words,
                              stack_id id) const {
        if (walk != nullptr && id != no_stack) {
            walk->keep_with_python(python_words, {stacks.serial(), skip, limit, id});
        }
    }

  private:
    // Whether `remembered` was interned under this capture's table, skip and limit.
    bool holds(const detail::remembered_id& remembered, const stack_table& stacks) const {
        return remembered.table == stacks.serial() && remembered.skip == skip &&
               remembered.limit == limit;
    }
};

// intern_with_python's lookup, once the Python frames were read into `python_part` unchecked
// (`read` words, at least one; nullopt when they could not be): a stack found holds kept code
// objects only; a new one is read again with its code objects checked and kept. `frames` holds the
// native stack in its first `native_count` words. Sets `python_words` to the Python words the stack
// has.
stack_id intern_with_python_frames(stack_table& stacks, detail::python_capture& capture,
                                   std::span<uintptr_t> frames, size_t native_count,
                                   std::span<uintptr_t> python_part, std::optional<size_t> read,
                                   remembered_stacks& remembered, size_t& python_words) {
    python_words = 0;
    if (read) {
        const stack_id found = cost::timed(cost::counter::py_find, [&] {
            return stacks.find(frames.first(native_count + 1 + *read));
        });
        if (found != no_stack) {
            cost::add(cost::counter::find_hit, 1);
            python_words = *read;
            return found;
        }
        cost::add(cost::counter::find_miss, 1);
    }
    const cost::zone timing(cost::counter::py_slow);
    const size_t checked_words = capture.frames(python_part);
    remembered.forget_if_walked_since();
    if (checked_words == 0) {
        return remembered.intern_native(stacks, frames.first(native_count));
    }
    bool added = false;
    const stack_id id = stacks.intern(frames.first(native_count + 1 + checked_words), &added);
    if (added) {
        capture.keep_code(python_part.first(checked_words));
    }
    python_words = checked_words;
    return id;
}

// Interns the native stack `native` with the calling thread's Python frames after it, up to
// `depth` of them (python_capture says which threads have them), in `frames`: room for both,
// whose first words `native` may already be. Runs before any memtrail lock: it may wait for the
// GIL.
stack_id intern_with_python(stack_table& stacks, std::span<uintptr_t> frames,
                            std::span<const uintptr_t> native, size_t depth,
                            remembered_stacks remembered) {
    const detail::python_interpreter* python = detail::find_python_interpreter();
    if (python == nullptr) {
        return remembered.intern_native(stacks, native);
    }
    detail::python_capture capture = cost::timed(
        cost::counter::py_ctor, [&] { return detail::python_capture(*python, native); });
    const size_t native_count = native.size();
    const std::span<uintptr_t> python_part = frames.subspan(native_count + 1, 2 * depth);
    frames[native_count] = detail::python_frames_marker;
    // A stack interned before holds only kept code objects: found again, its frames need no
    // check. Most captures repeat a stack, so only new ones pay for the check.
    const std::optional<size_t> read =
        cost::timed(cost::counter::py_read, [&] { return capture.frames_unchecked(python_part); });
    if (read) {
        cost::add(cost::counter::py_words, *read);
    }
    if (read && *read == 0) {
        return remembered.intern_native(stacks, native);  // no Python code running (autograd's)
    }
    // The same native walk and the same Python frames: the same stack, without hashing the whole
    // or looking it up.
    if (read) {
        const cost::zone timing(cost::counter::py_find);
        if (const stack_id id = remembered.with_python(stacks, python_part.first(*read));
            id != no_stack) {
            cost::add(cost::counter::py_cached, 1);
            return id;
        }
    }
    // Only a stack hashed or read again needs the native frames beside the Python ones. Copied
    // before anything that may run Python code: a finalizer that frees a tensor would capture
    // again on this thread and change the kept walk that `native` may be a view of.
    if (native.data() != frames.data()) {
        std::copy(native.begin(), native.end(), frames.begin());
    }
    size_t python_words = 0;
    const stack_id id = intern_with_python_frames(stacks, capture, frames, native_count,
                                                  python_part, read, remembered, python_words);
    remembered.remember_with_python(stacks, python_part.first(python_words), id);
    return id;
}

// The native stack of the calling thread, up to out.size() frames after leaving out `skip`,
// interned.
[[gnu::always_inline]] inline stack_id capture_native_stack(stack_table& stacks, unwinder method,
                                                            std::span<uintptr_t> out, size_t skip) {
    detail::walked_stack walked;
    {
        const cost::zone timing(cost::counter::native);
        walked = detail::capture_walked_stack(method, out, skip);
    }
    cost::add(cost::counter::native_frames, walked.frames.size());
    return remembered_stacks::of(walked, skip, out.size()).intern_native(stacks, walked.frames);
}

// capture_stack's own frame, between its caller and capture_walked_stack (kept out of line so that
// the count holds).
constexpr size_t own_frames = 1;

}  // namespace

[[gnu::noinline]] stack_id capture_stack(stack_table& table, const capture_options& options,
                                         size_t skip) {
    // Room for the native frames, the marker and a (code, location) pair per Python frame.
    std::array<uintptr_t, 3 * max_stack_depth + 1> frames;
    const std::span<uintptr_t> native_part(frames.data(), options.depth);
    skip += own_frames;
    if (options.source == stack_source::native) {
        return capture_native_stack(table, options.method, native_part, skip);
    }
    detail::walked_stack walked;
    if (options.source != stack_source::python) {
        const cost::zone timing(cost::counter::native);
        walked = detail::capture_walked_stack(options.method, native_part, skip);
        cost::add(cost::counter::native_frames, walked.frames.size());
    }
    return intern_with_python(table, frames, walked.frames, options.depth,
                              remembered_stacks::of(walked, skip, options.depth));
}

}  // namespace memtrail::recorder
