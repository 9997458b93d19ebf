// The recording path: capture_context runs before the allocator's lock, on_event under it.
// Both are on every allocation's path, so they stay short.

#include "memtrail/recorder/recorder.hpp"

#include <chrono>
#include <stdexcept>
#include <string>

#include "detail/call_context.hpp"
#include "detail/capture_pools.hpp"
#include "detail/device_history.hpp"
#include "detail/fast_clock.hpp"
#include "detail/observed_allocations.hpp"
#include "detail/outside_allocations.hpp"
#include "detail/thread_identity.hpp"
#include "detail/trace_ring.hpp"
#include "memtrail/bridge/allocator_snapshot.hpp"
#include "memtrail/stacks/cost_counters.hpp"
#include "memtrail/stacks/interned_capture.hpp"

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

// Frames of the recorder between the caller and capture_stack: capture_context and the
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
        captures_.push_back(std::make_unique<detail::capture_pools>(allocator_.on(d)));
        devices_.back()->options.enabled = record_mode::off;
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
            // Only a trace needs the allocator's events: unobserved, its operations take the
            // bare path.
            allocator_.on(d).set_observer(options.enabled == record_mode::all ? this : nullptr);
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

bool recorder::recording(int device) const {
    return device >= 0 && device < static_cast<int>(devices_.size()) &&
           devices_[static_cast<size_t>(device)]->enabled.load(std::memory_order_relaxed) !=
               record_mode::off;
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
    const cost::zone timing(cost::counter::capture_context);
    cost::add(cost::counter::events_ctx, 1);
    stack_id stack = no_stack;
    if (is_free ? context == context_mode::all : context != context_mode::none) {
        const capture_options options{h.stacks.load(std::memory_order_relaxed),
                                      h.stack_unwinder.load(std::memory_order_relaxed),
                                      h.max_stack_depth.load(std::memory_order_relaxed)};
        stack = capture_stack(stacks_, options, recorder_frames + wrapper_frames);
    }
    const int64_t time_ns = cost::timed(cost::counter::clock, [] { return now_ns(); });
    return detail::encode_call_context(stack, time_ns, epoch_ns_);
}

[[gnu::noinline]] device_address recorder::allocate(uint64_t size, int device, stream_handle stream,
                                                    size_t wrapper_frames) {
    device_allocator& on_device = allocator_.on(device);  // throws for a device that is not
    captures_[static_cast<size_t>(device)]->prepare(stream);
    const cost::zone timing(cost::counter::alloc_total);
    const context_handle context =
        recording(device) ? capture_context(device, false, wrapper_frames) : 0;
    return on_device.allocate(size, stream, context);
}

[[gnu::noinline]] void recorder::free(device_address address, int expected_device,
                                      size_t wrapper_frames, stream_handle stream) {
    const int device =
        expected_device != unknown_device ? expected_device : allocator_.device_for(address);
    if (stream != 0 && device >= 0 && device < static_cast<int>(captures_.size())) {
        captures_[static_cast<size_t>(device)]->prepare(stream);
    }
    const cost::zone timing(cost::counter::free_total);
    const context_handle context =
        recording(device) ? capture_context(device, true, wrapper_frames) : 0;
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
    const cost::zone timing(cost::counter::on_event);
    cost::add(cost::counter::on_event_calls, 1);
    const detail::call_context call = detail::decode_call_context(event.context, epoch_ns_);
    // Made by the device lock's holder for another thread: that thread's identity.
    const detail::thread_identity caller =
        event.caller != 0 ? detail::from_word(event.caller) : detail::this_thread_identity();
    const uint32_t keeping_stack = h.actions_keeping_stack.load(std::memory_order_relaxed);
    const uint64_t end = cost::timed(cost::counter::push, [&] {
        return h.ring.push_filled([&](detail::trace_record& record) {
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
    });
    if (event.action == allocator_action::snapshot) {
        detail::snapshot_cut_on_this_thread = end;
    }
}

uint64_t recorder::caller() const {
    return detail::to_word(detail::this_thread_identity());
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
