#include "memtrail/core/simulated_device.hpp"

#include <algorithm>
#include <sstream>

namespace memtrail {

namespace {
std::string hex(uint64_t v) {
    std::ostringstream s;
    s << "0x" << std::hex << v;
    return s.str();
}
}  // namespace

simulated_device::simulated_device(simulated_device_options options)
    : options_(std::move(options)), next_address_(options_.base_address), rng_(1) {
    if (options_.granularity == 0 || (options_.granularity & (options_.granularity - 1)) != 0) {
        throw device_error("simulated device: granularity must be a power of two, got " +
                           std::to_string(options_.granularity));
    }
}

bool simulated_device::should_fail_locked() {
    if (fail_countdown_ != 0 && --fail_countdown_ == 0) {
        return true;
    }
    if (failure_probability_ > 0.0) {
        return std::uniform_real_distribution<double>(0.0, 1.0)(rng_) < failure_probability_;
    }
    return false;
}

bool simulated_device::range_free_locked(device_address start, uint64_t size) const {
    auto it = occupied_.upper_bound(start);
    if (it != occupied_.begin() && std::prev(it)->second > start) {
        return false;  // the range before reaches into this one
    }
    return it == occupied_.end() || it->first >= start + size;
}

device_address simulated_device::next_address_locked(uint64_t size) {
    const uint64_t g = options_.granularity;
    const uint64_t span = (size + g - 1) / g * g;
    // Queued addresses come first, unless one would overlap memory already handed out (a
    // replay that departed from its trace): such an address is dropped.
    while (!queued_addresses_.empty()) {
        const device_address a = queued_addresses_.front();
        queued_addresses_.pop_front();
        if (range_free_locked(a, span)) {
            occupied_[a] = a + span;
            return a;
        }
    }
    // Deterministic: ranges one after another, aligned to the granularity, skipping any taken.
    while (!range_free_locked(next_address_, span)) {
        next_address_ = occupied_.upper_bound(next_address_) == occupied_.begin()
                            ? next_address_ + g
                            : std::max(next_address_ + g,
                                       std::prev(occupied_.upper_bound(next_address_))->second);
    }
    const device_address a = next_address_;
    next_address_ += span;
    occupied_[a] = a + span;
    return a;
}

device_status simulated_device::allocate(uint64_t size, device_address& out) {
    std::lock_guard<std::mutex> lock(mutex_);
    calls_.allocate++;
    if (used_ + external_ + size > options_.capacity || size > options_.capacity ||
        should_fail_locked()) {
        calls_.failed_allocations++;
        return device_status::out_of_memory;
    }
    out = next_address_locked(size);
    allocations_[out] = size;
    used_ += size;
    return device_status::ok;
}

void simulated_device::free(device_address address) {
    std::lock_guard<std::mutex> lock(mutex_);
    calls_.free++;
    refuse_during_capture_locked("free");
    auto it = allocations_.find(address);
    if (it == allocations_.end()) {
        throw device_error("simulated device: free of " + hex(address) +
                           ", which is not allocated");
    }
    used_ -= it->second;
    occupied_.erase(address);
    allocations_.erase(it);
}

memory_info simulated_device::get_memory_info() {
    std::lock_guard<std::mutex> lock(mutex_);
    calls_.memory_info++;
    const uint64_t taken = used_ + external_;
    return {options_.capacity > taken ? options_.capacity - taken : 0, options_.capacity};
}

event_handle simulated_device::create_event() {
    std::lock_guard<std::mutex> lock(mutex_);
    calls_.create_event++;
    const event_handle e = next_event_++;
    events_[e] = event_state{};
    return e;
}

void simulated_device::destroy_event(event_handle event) {
    std::lock_guard<std::mutex> lock(mutex_);
    calls_.destroy_event++;
    events_.erase(event);
}

void simulated_device::record_event(event_handle event, stream_handle stream) {
    std::lock_guard<std::mutex> lock(mutex_);
    calls_.record_event++;
    auto it = events_.find(event);
    if (it == events_.end()) {
        throw device_error("simulated device: record of unknown event " + std::to_string(event));
    }
    it->second = {stream, true, options_.events_complete_immediately, ++record_counter_};
}

bool simulated_device::query_event(event_handle event) {
    std::lock_guard<std::mutex> lock(mutex_);
    calls_.query_event++;
    refuse_during_capture_locked("query_event");
    auto it = events_.find(event);
    return it == events_.end() || it->second.completed;
}

void simulated_device::synchronize_event(event_handle event) {
    std::lock_guard<std::mutex> lock(mutex_);
    calls_.synchronize_event++;
    refuse_during_capture_locked("synchronize_event");
    auto it = events_.find(event);
    if (it != events_.end()) {
        it->second.completed = true;  // waiting for an event means it is done afterwards
    }
}

void simulated_device::synchronize_stream(stream_handle stream) {
    std::lock_guard<std::mutex> lock(mutex_);
    calls_.synchronize_stream++;
    refuse_during_capture_locked("synchronize_stream");
    for (auto& [handle, state] : events_) {
        if (state.recorded && state.stream == stream) {
            state.completed = true;
        }
    }
}

void simulated_device::synchronize_device() {
    std::lock_guard<std::mutex> lock(mutex_);
    calls_.synchronize_device++;
    refuse_during_capture_locked("synchronize_device");
    for (auto& [handle, state] : events_) {
        state.completed = true;
    }
}

uint64_t simulated_device::stream_capture_id(stream_handle stream) {
    // Asked on every recorded allocation: no lock while nothing captures.
    if (capture_count_.load(std::memory_order_acquire) == 0) {
        return 0;
    }
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = captures_.find(stream);
    return it == captures_.end() ? 0 : it->second;
}

uint64_t simulated_device::begin_capture(stream_handle stream) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto [it, inserted] = captures_.try_emplace(stream, next_capture_);
    if (!inserted) {
        throw device_error("simulated device: stream " + hex(stream) + " is capturing already");
    }
    capture_count_.store(captures_.size(), std::memory_order_release);
    return next_capture_++;
}

void simulated_device::end_capture(stream_handle stream) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (captures_.erase(stream) == 0) {
        throw device_error("simulated device: stream " + hex(stream) + " is not capturing");
    }
    capture_count_.store(captures_.size(), std::memory_order_release);
}

void simulated_device::refuse_during_capture_locked(const char* call) const {
    if (!captures_.empty()) {
        throw device_error(std::string("simulated device: ") + call +
                           " during a stream capture would invalidate it "
                           "(cudaErrorStreamCaptureInvalidated)");
    }
}

device_status simulated_device::reserve_address_range(uint64_t size, device_address& out) {
    std::lock_guard<std::mutex> lock(mutex_);
    calls_.reserve++;
    out = next_address_locked(size);
    reservations_[out] = size;
    return device_status::ok;
}

void simulated_device::release_address_range(device_address address, uint64_t size) {
    std::lock_guard<std::mutex> lock(mutex_);
    calls_.release_range++;
    refuse_during_capture_locked("release_address_range");
    auto it = reservations_.find(address);
    if (it == reservations_.end() || it->second != size) {
        throw device_error("simulated device: release of address range " + hex(address) +
                           " that was not reserved with that size");
    }
    reservations_.erase(it);
    occupied_.erase(address);
}

device_status simulated_device::create_physical(uint64_t size, physical_handle& out) {
    std::lock_guard<std::mutex> lock(mutex_);
    calls_.create_physical++;
    if (size % options_.granularity != 0) {
        throw device_error("simulated device: physical size " + std::to_string(size) +
                           " is not a multiple of the granularity " +
                           std::to_string(options_.granularity));
    }
    if (used_ + external_ + size > options_.capacity || size > options_.capacity ||
        should_fail_locked()) {
        calls_.failed_allocations++;
        return device_status::out_of_memory;
    }
    out = next_physical_++;
    physical_[out] = size;
    used_ += size;
    return device_status::ok;
}

void simulated_device::release_physical(physical_handle handle) {
    std::lock_guard<std::mutex> lock(mutex_);
    calls_.release_physical++;
    refuse_during_capture_locked("release_physical");
    auto it = physical_.find(handle);
    if (it == physical_.end()) {
        throw device_error("simulated device: release of unknown physical handle " +
                           std::to_string(handle));
    }
    used_ -= it->second;
    physical_.erase(it);
}

void simulated_device::map(device_address address, uint64_t size, physical_handle handle) {
    std::lock_guard<std::mutex> lock(mutex_);
    calls_.map++;
    if (!physical_.count(handle)) {
        throw device_error("simulated device: map of unknown physical handle");
    }
    if (mappings_.count(address)) {
        throw device_error("simulated device: " + hex(address) + " is already mapped");
    }
    mappings_[address] = {size, handle};
}

void simulated_device::unmap(device_address address, uint64_t size) {
    std::lock_guard<std::mutex> lock(mutex_);
    calls_.unmap++;
    refuse_during_capture_locked("unmap");
    auto it = mappings_.find(address);
    if (it == mappings_.end() || it->second.first != size) {
        throw device_error("simulated device: unmap of " + hex(address) + " which is not mapped");
    }
    mappings_.erase(it);
}

void simulated_device::set_access(device_address, uint64_t) {
    std::lock_guard<std::mutex> lock(mutex_);
    calls_.set_access++;
}

void simulated_device::queue_addresses(const std::vector<device_address>& addresses) {
    std::lock_guard<std::mutex> lock(mutex_);
    queued_addresses_.insert(queued_addresses_.end(), addresses.begin(), addresses.end());
}

size_t simulated_device::queued_address_count() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return queued_addresses_.size();
}

void simulated_device::set_events_complete_immediately(bool immediately) {
    std::lock_guard<std::mutex> lock(mutex_);
    options_.events_complete_immediately = immediately;
}

void simulated_device::complete_event(event_handle event) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = events_.find(event);
    if (it != events_.end()) {
        it->second.completed = true;
    }
}

void simulated_device::complete_stream(stream_handle stream) {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto& [handle, state] : events_) {
        if (state.recorded && state.stream == stream) {
            state.completed = true;
        }
    }
}

void simulated_device::complete_all_events() {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto& [handle, state] : events_) {
        state.completed = true;
    }
}

std::vector<event_handle> simulated_device::pending_events() const {
    std::lock_guard<std::mutex> lock(mutex_);
    std::vector<std::pair<uint64_t, event_handle>> pending;
    for (const auto& [handle, state] : events_) {
        if (state.recorded && !state.completed) {
            pending.emplace_back(state.record_order, handle);
        }
    }
    std::sort(pending.begin(), pending.end());
    std::vector<event_handle> out;
    for (const auto& p : pending) {
        out.push_back(p.second);
    }
    return out;
}

stream_handle simulated_device::event_stream(event_handle event) const {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = events_.find(event);
    return it == events_.end() ? 0 : it->second.stream;
}

void simulated_device::fail_nth_allocation(uint64_t n) {
    std::lock_guard<std::mutex> lock(mutex_);
    fail_countdown_ = n;
}

void simulated_device::set_failure_probability(double p, uint64_t seed) {
    std::lock_guard<std::mutex> lock(mutex_);
    failure_probability_ = p;
    rng_.seed(seed);
}

void simulated_device::clear_faults() {
    std::lock_guard<std::mutex> lock(mutex_);
    fail_countdown_ = 0;
    failure_probability_ = 0.0;
}

void simulated_device::set_external_usage(uint64_t bytes) {
    std::lock_guard<std::mutex> lock(mutex_);
    external_ = bytes;
}

void simulated_device::set_capacity(uint64_t capacity) {
    std::lock_guard<std::mutex> lock(mutex_);
    options_.capacity = capacity;
}

simulated_device_calls simulated_device::calls() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return calls_;
}

uint64_t simulated_device::used_bytes() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return used_;
}

size_t simulated_device::live_allocation_count() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return allocations_.size();
}

}  // namespace memtrail
