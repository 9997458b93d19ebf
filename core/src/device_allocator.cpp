// The public face of one device's allocator: argument checks and the address lookup happen here,
// outside the device lock; the policy lives in device_allocator_impl.

#include <sstream>

#include "detail/device_allocator_impl.hpp"

namespace memtrail {

namespace {
// Requests this large are mistakes (a negative size cast to unsigned, an overflow), not memory
// to look for; rejecting them keeps rounding arithmetic far from overflow.
constexpr uint64_t absurd_size = 1ull << 60;  // 1 EiB

std::string hex(uint64_t v) {
    std::ostringstream s;
    s << "0x" << std::hex << v;
    return s.str();
}
}  // namespace

device_allocator::device_allocator(device& dev, allocator_config config)
    : impl_(std::make_unique<detail::device_allocator_impl>(dev, std::move(config))) {}

device_allocator::~device_allocator() = default;

device_address device_allocator::allocate(uint64_t size, stream_handle stream,
                                          context_handle context) {
    if (size == 0) [[unlikely]] {
        throw usage_error("memtrail: allocation of 0 bytes on device " +
                          std::to_string(impl_->dev.index()) +
                          ": sizes from 1 byte to 1 EiB (exclusive) are accepted");
    }
    if (size >= absurd_size) [[unlikely]] {
        throw usage_error("memtrail: allocation of " + std::to_string(size) + " bytes on device " +
                          std::to_string(impl_->dev.index()) +
                          " is absurd (1 EiB or more); check for a negative or overflowed size");
    }
    return impl_->malloc(size, stream, context);
}

void device_allocator::free(device_address address, context_handle context) {
    if (impl_->free(address, context) == nullptr) [[unlikely]] {
        // Tell a double free (the address starts a free block we own) from a foreign pointer.
        bool is_free_block = false;
        for (const auto& segment : impl_->snapshot(false)) {
            for (const auto& block : segment.blocks) {
                is_free_block |= block.address == address && !block.allocated;
            }
        }
        throw unknown_pointer_error(
            is_free_block ? "memtrail: double free of " + hex(address) + " on device " +
                                std::to_string(impl_->dev.index()) + ": the block is already free"
                          : "memtrail: free of " + hex(address) + " on device " +
                                std::to_string(impl_->dev.index()) +
                                ": not an address this allocator handed out (or already freed)");
    }
}

void device_allocator::record_stream(device_address address, stream_handle stream) {
    if (!impl_->record_stream(address, stream)) {
        throw unknown_pointer_error("memtrail: record_stream on " + hex(address) +
                                    ": not an allocated address of device " +
                                    std::to_string(impl_->dev.index()));
    }
}

void device_allocator::empty_cache(context_handle context) {
    impl_->empty_cache(context, pool_id{});
}

void device_allocator::empty_cache(pool_id pool, context_handle context) {
    impl_->empty_cache(context, pool);
}

void device_allocator::create_pool(pool_id pool, pool_options options) {
    impl_->create_pool(pool, options);
}

void device_allocator::begin_allocate_to_pool(pool_id pool, stream_filter filter) {
    if (!filter) {
        throw usage_error(
            "memtrail: begin_allocate_to_pool needs a filter (which allocations go "
            "to the pool)");
    }
    impl_->begin_allocate_to_pool(pool, std::move(filter));
}

void device_allocator::end_allocate_to_pool(pool_id pool) {
    impl_->end_allocate_to_pool(pool);
}

void device_allocator::release_pool(pool_id pool) {
    impl_->release_pool(pool);
}

int device_allocator::pool_use_count(pool_id pool) const {
    return impl_->pool_use_count(pool);
}

bool device_allocator::allocates_to_pool(stream_handle stream) const {
    return impl_->allocates_to_pool(stream);
}

void device_allocator::set_memory_fraction(double fraction) {
    if (!(fraction >= 0.0 && fraction <= 1.0)) {
        throw usage_error("memtrail: memory fraction " + std::to_string(fraction) +
                          " is invalid; accepted: 0.0 to 1.0");
    }
    impl_->set_memory_fraction(fraction);
}

double device_allocator::memory_fraction() const {
    return impl_->memory_fraction();
}

void device_allocator::process_events(context_handle context) {
    std::lock_guard<detail::reentrant_mutex> lock(impl_->mutex);
    impl_->process_events_locked(context);
}

bool device_allocator::would_release_memory(uint64_t size, stream_handle stream) const {
    return impl_->would_release_memory(size, stream);
}

bool device_allocator::has_cached_block(uint64_t size, stream_handle stream, pool_id pool) const {
    return impl_->has_cached_block(size, stream, pool);
}

device_stats device_allocator::stats() const {
    return impl_->get_stats();
}

std::string device_allocator::memory_summary(bool abbreviated) const {
    return format_memory_summary(stats(), impl_->dev.index(), abbreviated);
}

void device_allocator::reset_peak_stats() {
    impl_->reset_peak_stats();
}
void device_allocator::reset_accumulated_stats() {
    impl_->reset_accumulated_stats();
}

std::vector<segment_info> device_allocator::snapshot(bool record_event) const {
    return impl_->snapshot(record_event);
}

uint64_t device_allocator::allocated_size(device_address address) const {
    std::lock_guard<detail::reentrant_mutex> lock(impl_->mutex);
    const detail::block* b = impl_->allocated.find(address);
    return b ? b->size : 0;
}

bool device_allocator::may_own(device_address address) const {
    return impl_->segments.may_hold(address);
}

const allocator_config& device_allocator::config() const {
    return impl_->config;
}

void device_allocator::set_config(allocator_config config) {
    std::lock_guard<detail::reentrant_mutex> lock(impl_->mutex);
    config.device_lock = impl_->config.device_lock;  // the lock, made with the allocator, stays
    impl_->config = std::move(config);
    impl_->stats_.max_split_size =
        size_rules::max_split_size_statistic(impl_->config.max_split_size);
}

void device_allocator::set_observer(allocator_observer* observer) {
    std::lock_guard<detail::reentrant_mutex> lock(impl_->mutex);
    impl_->observer = observer;
}

void device_allocator::run_under_lock(const std::function<void()>& f) {
    std::lock_guard<detail::reentrant_mutex> lock(impl_->mutex);
    f();
}

void device_allocator::add_free_memory_callback(free_memory_callback callback) {
    std::lock_guard<detail::reentrant_mutex> lock(impl_->mutex);
    impl_->free_memory_callbacks.push_back(std::move(callback));
}

void device_allocator::add_oom_observer(oom_observer observer) {
    std::lock_guard<detail::reentrant_mutex> lock(impl_->mutex);
    impl_->oom_observers.push_back(std::move(observer));
}

std::string device_allocator::check_consistency() const {
    return impl_->check_consistency();
}

device& device_allocator::get_device() const {
    return impl_->dev;
}
int device_allocator::device_index() const {
    return impl_->dev.index();
}

}  // namespace memtrail
