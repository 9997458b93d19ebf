// recorder::observe_allocation / observe_free: allocations made by the program itself, recorded
// as the allocator would record a segment of one block (segment_alloc then alloc; free_requested,
// free_completed then segment_free), with the caller's stack.

#include "detail/observed_allocations.hpp"

#include <cstdio>
#include <stdexcept>
#include <string>

#include "memtrail/recorder/recorder.hpp"

namespace memtrail::recorder {

namespace detail {

std::optional<device_address> observed_allocations::add(int device, device_address address,
                                                        const observed_allocation& allocation) {
    std::lock_guard lock(mutex_);
    auto& live = live_.at(static_cast<size_t>(device));
    const auto next = live.lower_bound(address);
    if (next != live.end() && (next->first == address || next->first - address < allocation.size)) {
        return next->first;  // starts here or inside the new one
    }
    if (next != live.begin()) {
        const auto before = std::prev(next);
        if (address - before->first < before->second.size) {
            return before->first;  // the new one starts inside it
        }
    }
    live.emplace_hint(next, address, allocation);
    return std::nullopt;
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
    const auto hex = [](uint64_t value) {
        char text[24];
        std::snprintf(text, sizeof text, "0x%llx", static_cast<unsigned long long>(value));
        return std::string(text);
    };
    if (address == 0) {
        throw std::invalid_argument(
            "memtrail: an observed allocation at NULL: no allocation has "
            "address 0");
    }
    if (size > UINT64_MAX - address) {
        throw std::invalid_argument("memtrail: an observed allocation of " + std::to_string(size) +
                                    " bytes at " + hex(address) +
                                    " would end past the 64-bit address space");
    }
    const context_handle context = capture_context(device, false, wrapper_frames);
    if (const auto live = observed_->add(device, address, {size, stream, context})) {
        throw std::invalid_argument("memtrail: an observed allocation of " + std::to_string(size) +
                                    " bytes at " + hex(address) + " overlaps the one at " +
                                    hex(*live) + " on device " + std::to_string(device) +
                                    ", which was not freed (observe its free first)");
    }
    allocator_event event{
        allocator_action::segment_alloc, device, address, size, size, stream, context, pool_id{}};
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
