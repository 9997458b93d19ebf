// The recording path: capture_context runs before the allocator's lock, on_event under it.
// Both are on every allocation's path, so they stay short.

#include "memtrail/recorder/recorder.hpp"

#include <array>
#include <chrono>
#include <span>
#include <stdexcept>
#include <string>

#include "detail/call_context.hpp"
#include "detail/capture_pools.hpp"
#include "detail/device_history.hpp"
#include "detail/eh_frame_unwinder.hpp"
#include "detail/fast_clock.hpp"
#include "detail/observed_allocations.hpp"
#include "detail/outside_allocations.hpp"
#include "detail/python_stack.hpp"
#include "detail/thread_identity.hpp"
#include "detail/trace_ring.hpp"
#include "memtrail/bridge/allocator_snapshot.hpp"

namespace memtrail::recorder {

namespace {

int64_t now_ns() {
    return detail::fast_now_ns();
}

// Which trace entries keep their stack under each context mode: a bit per allocator_action.
uint32_t actions_keeping_stack(context_mode context) {
    const auto bit = [](allocator_action action) {
        return uint32_t{1} << static_cast<int>(action);
    };
    switch (context) {
        case context_mode::none:
        case context_mode::state:
            return 0;
        case context_mode::alloc:
            return bit(allocator_action::alloc) | bit(allocator_action::segment_alloc) |
                   bit(allocator_action::segment_map) | bit(allocator_action::oom);
        case context_mode::all:
            return ~uint32_t{0};
    }
    return 0;
}

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
            return walk->native.id;
        }
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
        for (const detail::interned_walk::with_python_frames& stack : walk->with_python) {
            if (stack.word_count == python_words.size() && holds(stack.id, stacks) &&
                std::equal(python_words.begin(), python_words.end(), stack.words.begin())) {
                return stack.id.id;
            }
        }
        return no_stack;
    }

    // Remembers `id` as the native stack with `python_words` after it, in place of the one
    // remembered longest ago.
    void remember_with_python(const stack_table& stacks, std::span<const uintptr_t> python_words,
                              stack_id id) const {
        if (walk == nullptr || id == no_stack || python_words.empty() ||
            python_words.size() > detail::interned_walk::kept_python_words) {
            return;
        }
        detail::interned_walk::with_python_frames& stack =
            walk->with_python[walk->next_with_python];
        walk->next_with_python =
            (walk->next_with_python + 1) % detail::interned_walk::kept_python_stacks;
        stack.id = {stacks.serial(), skip, limit, id};
        stack.word_count = static_cast<uint32_t>(python_words.size());
        std::copy(python_words.begin(), python_words.end(), stack.words.begin());
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
        const stack_id found = stacks.find(frames.first(native_count + 1 + *read));
        if (found != no_stack) {
            python_words = *read;
            return found;
        }
    }
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
    detail::python_capture capture(*python, native);
    const size_t native_count = native.size();
    const std::span<uintptr_t> python_part = frames.subspan(native_count + 1, 2 * depth);
    frames[native_count] = detail::python_frames_marker;
    // A stack interned before holds only kept code objects: found again, its frames need no
    // check. Most captures repeat a stack, so only new ones pay for the check.
    const std::optional<size_t> read = capture.frames_unchecked(python_part);
    if (read && *read == 0) {
        return remembered.intern_native(stacks, native);  // no Python code running (autograd's)
    }
    // The same native walk and the same Python frames: the same stack, without hashing the whole
    // or looking it up.
    if (read) {
        if (const stack_id id = remembered.with_python(stacks, python_part.first(*read));
            id != no_stack) {
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
    const detail::walked_stack walked = detail::capture_walked_stack(method, out, skip);
    return remembered_stacks::of(walked, skip, out.size()).intern_native(stacks, walked.frames);
}

// Frames of the recorder between the caller and capture_walked_stack: capture_context and the
// front door method (both kept out of line so that the count holds).
constexpr size_t recorder_frames = 2;

}  // namespace

recorder::recorder(caching_allocator& allocator)
    : allocator_(allocator),
      epoch_ns_(now_ns()),
      observed_(std::make_unique<detail::observed_allocations>(allocator.device_count())),
      outside_(std::make_unique<detail::outside_allocations>()) {
    for (int d = 0; d < allocator_.device_count(); ++d) {
        devices_.push_back(std::make_unique<device_history>());
        captures_.push_back(std::make_unique<detail::capture_pools>());
        devices_.back()->options.enabled = record_mode::off;
        allocator_.on(d).set_observer(this);
    }
}

recorder::~recorder() {
    for (int d = 0; d < allocator_.device_count(); ++d) {
        allocator_.on(d).set_observer(nullptr);
    }
}

recorder::device_history& recorder::history(int device) const {
    if (device < 0 || device >= static_cast<int>(devices_.size())) {
        throw std::invalid_argument("memtrail: no device " + std::to_string(device) +
                                    " (there are " + std::to_string(devices_.size()) + ")");
    }
    return *devices_[static_cast<size_t>(device)];
}

void recorder::record_memory_history(const history_options& options, int device) {
    if (options.max_stack_depth > max_stack_depth) {
        throw std::invalid_argument("memtrail: max_stack_depth " +
                                    std::to_string(options.max_stack_depth) + " is over " +
                                    std::to_string(max_stack_depth));
    }
    if (device != all_devices) {
        history(device);
    }
    if (options.enabled != record_mode::off && options.context != context_mode::none &&
        options.stacks != stack_source::python) {
        prepare_stack_capture(options.stack_unwinder);
    }
    for (int d = 0; d < static_cast<int>(devices_.size()); ++d) {
        if (device != all_devices && d != device) {
            continue;
        }
        device_history& h = *devices_[static_cast<size_t>(d)];
        std::lock_guard lock(h.options_mutex);
        // The ring is the device lock's (trace_ring.hpp).
        allocator_.on(d).run_under_lock([&] {
            if (options.clear_history) {
                h.ring.clear();
            }
            h.ring.set_capacity(options.max_entries);
        });
        h.options = options;
        h.options.clear_history = false;
        h.stacks.store(options.stacks, std::memory_order_relaxed);
        h.stack_unwinder.store(options.stack_unwinder, std::memory_order_relaxed);
        h.max_stack_depth.store(options.max_stack_depth, std::memory_order_relaxed);
        h.context.store(options.context, std::memory_order_relaxed);
        h.actions_keeping_stack.store(actions_keeping_stack(options.context),
                                      std::memory_order_relaxed);
        h.enabled.store(options.enabled, std::memory_order_release);
    }
}

history_options recorder::options(int device) const {
    const device_history& h = history(device);
    std::lock_guard lock(h.options_mutex);
    return h.options;
}

[[gnu::noinline]] context_handle recorder::capture_context(int device, bool is_free,
                                                           size_t wrapper_frames) {
    if (device < 0 || device >= static_cast<int>(devices_.size())) {
        return 0;  // the allocator reports the bad device
    }
    const device_history& h = *devices_[static_cast<size_t>(device)];
    if (h.enabled.load(std::memory_order_acquire) == record_mode::off) {
        return 0;
    }
    const context_mode context = h.context.load(std::memory_order_relaxed);
    stack_id stack = no_stack;
    if (is_free ? context == context_mode::all : context != context_mode::none) {
        // Room for the native frames, the marker and a (code, location) pair per Python frame.
        std::array<uintptr_t, 3 * max_stack_depth + 1> frames;
        const size_t depth = h.max_stack_depth.load(std::memory_order_relaxed);
        const stack_source source = h.stacks.load(std::memory_order_relaxed);
        const unwinder method = h.stack_unwinder.load(std::memory_order_relaxed);
        const size_t skip = recorder_frames + wrapper_frames;
        if (source == stack_source::native) {
            stack = capture_native_stack(stacks_, method,
                                         std::span<uintptr_t>(frames.data(), depth), skip);
        } else {
            const detail::walked_stack walked =
                source == stack_source::python
                    ? detail::walked_stack{}
                    : detail::capture_walked_stack(
                          method, std::span<uintptr_t>(frames.data(), depth), skip);
            stack = intern_with_python(stacks_, frames, walked.frames, depth,
                                       remembered_stacks::of(walked, skip, depth));
        }
    }
    return detail::encode_call_context(stack, now_ns(), epoch_ns_);
}

[[gnu::noinline]] device_address recorder::allocate(uint64_t size, int device, stream_handle stream,
                                                    size_t wrapper_frames) {
    if (device >= 0 && device < static_cast<int>(captures_.size())) {
        captures_[static_cast<size_t>(device)]->prepare(allocator_.on(device), stream);
    }
    const context_handle context = capture_context(device, false, wrapper_frames);
    return allocator_.allocate(size, device, stream, context);
}

[[gnu::noinline]] void recorder::free(device_address address, int expected_device,
                                      size_t wrapper_frames, stream_handle stream) {
    const int device =
        expected_device != unknown_device ? expected_device : allocator_.device_for(address);
    if (stream != 0 && device >= 0 && device < static_cast<int>(captures_.size())) {
        captures_[static_cast<size_t>(device)]->prepare(allocator_.on(device), stream);
    }
    const context_handle context = capture_context(device, true, wrapper_frames);
    allocator_.free(address, device, context);
}

[[gnu::noinline]] void recorder::empty_cache(int device, size_t wrapper_frames) {
    if (device != all_devices) {
        history(device);
    }
    for (int d = 0; d < allocator_.device_count(); ++d) {
        if (device != all_devices && d != device) {
            continue;
        }
        const context_handle context = capture_context(d, true, wrapper_frames);
        allocator_.on(d).empty_cache(context);
    }
}

void recorder::create_pool(int device, pool_id pool, pool_options options) {
    allocator_.on(device).create_pool(pool, options);
}

void recorder::begin_allocate_to_pool(int device, pool_id pool, stream_filter filter) {
    allocator_.on(device).begin_allocate_to_pool(pool, std::move(filter));
}

void recorder::end_allocate_to_pool(int device, pool_id pool) {
    allocator_.on(device).end_allocate_to_pool(pool);
}

void recorder::release_pool(int device, pool_id pool) {
    allocator_.on(device).release_pool(pool);
}

int recorder::pool_use_count(int device, pool_id pool) {
    return allocator_.on(device).pool_use_count(pool);
}

[[gnu::noinline]] void recorder::empty_pool_cache(int device, pool_id pool, size_t wrapper_frames) {
    device_allocator& allocator = allocator_.on(device);
    allocator.empty_cache(pool, capture_context(device, true, wrapper_frames));
}

void recorder::on_event(const allocator_event& event) {
    if (event.device < 0 || event.device >= static_cast<int>(devices_.size())) {
        return;
    }
    device_history& h = *devices_[static_cast<size_t>(event.device)];
    if (h.enabled.load(std::memory_order_acquire) != record_mode::all) {
        if (event.action == allocator_action::snapshot) {
            detail::snapshot_cut_on_this_thread = h.ring.end();
        }
        return;
    }
    const detail::call_context call = detail::decode_call_context(event.context, epoch_ns_);
    const detail::thread_identity caller = detail::this_thread_identity();
    const uint32_t keeping_stack = h.actions_keeping_stack.load(std::memory_order_relaxed);
    const uint64_t end = h.ring.push_filled([&](detail::trace_record& record) {
        record.address = event.address;
        record.size = event.size;
        record.stream = event.stream;
        // The call's own time, taken just before the lock, saves a clock read per event (the
        // ring keeps times from going backwards when calls wait for the lock in another order).
        record.time_ns = call.time_ns != 0 ? call.time_ns : now_ns();
        record.stack = (keeping_stack >> static_cast<int>(event.action)) & 1 ? call.stack : 0;
        record.thread = caller.number;
        record.metadata = caller.metadata;
        record.name = 0;
        record.action = static_cast<uint8_t>(bridge::to_snapshot_action(event.action));
        record.device = static_cast<int8_t>(event.device);
    });
    if (event.action == allocator_action::snapshot) {
        detail::snapshot_cut_on_this_thread = end;
    }
}

void recorder::annotate(uint8_t action, std::string_view name) {
    detail::trace_record record;
    record.action = action;
    record.time_ns = now_ns();
    const detail::thread_identity caller = detail::this_thread_identity();
    record.thread = caller.number;
    record.metadata = caller.metadata;
    record.name = detail::intern_label(name);
    for (size_t d = 0; d < devices_.size(); ++d) {
        device_history& h = *devices_[d];
        if (h.enabled.load(std::memory_order_acquire) == record_mode::all) {
            record.device = static_cast<int8_t>(d);
            // The ring is the device lock's (trace_ring.hpp).
            allocator_.on(static_cast<int>(d)).run_under_lock([&] { h.ring.push(record); });
        }
    }
}

void recorder::range_start(std::string_view name) {
    annotate(static_cast<uint8_t>(snapshot::action::annotation_start), name);
}

void recorder::range_end(std::string_view name) {
    annotate(static_cast<uint8_t>(snapshot::action::annotation_end), name);
}

void recorder::marker(std::string_view name) {
    annotate(static_cast<uint8_t>(snapshot::action::annotation_marker), name);
}

void recorder::set_thread_metadata(std::string_view metadata) {
    detail::set_this_thread_metadata(metadata);
}

}  // namespace memtrail::recorder
