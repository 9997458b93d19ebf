// recorder::observe_allocation / observe_free: allocations made by the program itself, recorded
// as the allocator would record a segment of one block (segment_alloc then alloc; free_requested,
// free_completed then segment_free), with the caller's stack.

#include "detail/observed_allocations.hpp"

#include <stdexcept>
#include <string>

#include "memtrail/recorder/recorder.hpp"

namespace memtrail::recorder {

namespace detail {

void observed_allocations::add(int device, device_address address,
                               const observed_allocation& allocation) {
    std::lock_guard lock(mutex_);
    live_.at(static_cast<size_t>(device))[address] = allocation;
}

std::optional<observed_allocation> observed_allocations::remove(int device,
                                                                device_address address) {
    std::lock_guard lock(mutex_);
    auto& live = live_.at(static_cast<size_t>(device));
    const auto it = live.find(address);
    if (it == live.end()) {
        return std::nullopt;
    }
    const observed_allocation allocation = it->second;
    live.erase(it);
    return allocation;
}

std::map<device_address, observed_allocation> observed_allocations::live(int device) const {
    std::lock_guard lock(mutex_);
    return live_.at(static_cast<size_t>(device));
}

}  // namespace detail

[[gnu::noinline]] void recorder::observe_allocation(device_address address, uint64_t size,
                                                    int device, stream_handle stream,
                                                    size_t wrapper_frames) {
    history(device);
    const context_handle context = capture_context(device, false, wrapper_frames);
    observed_->add(device, address, {size, stream, context});
    allocator_event event{allocator_action::segment_alloc, device, address, size, size, stream,
                          context, pool_id{}};
    on_event(event);
    event.action = allocator_action::alloc;
    on_event(event);
}

[[gnu::noinline]] bool recorder::observe_free(device_address address, int device,
                                              size_t wrapper_frames) {
    history(device);
    const context_handle context = capture_context(device, true, wrapper_frames);
    const std::optional<detail::observed_allocation> allocation =
        observed_->remove(device, address);
    if (!allocation) {
        return false;
    }
    allocator_event event{allocator_action::free_requested,
                          device,
                          address,
                          allocation->size,
                          allocation->size,
                          allocation->stream,
                          context,
                          pool_id{}};
    on_event(event);
    event.action = allocator_action::free_completed;
    on_event(event);
    event.action = allocator_action::segment_free;
    on_event(event);
    return true;
}

}  // namespace memtrail::recorder
