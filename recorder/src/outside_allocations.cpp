// recorder::record_outside_allocation / record_outside_free / record_accounting: memory outside
// the caching allocator, kept apart from its trace (detail/outside_allocations.hpp).

#include "detail/outside_allocations.hpp"

#include <algorithm>
#include <stdexcept>

#include "detail/call_context.hpp"
#include "detail/fast_clock.hpp"
#include "memtrail/recorder/recorder.hpp"

namespace memtrail::recorder {

namespace detail {

uint32_t outside_allocations::name_index(std::string_view name) {
    const auto found = name_indexes_.find(name);
    if (found != name_indexes_.end()) {
        return found->second;
    }
    const auto index = static_cast<uint32_t>(names_.size());
    names_.emplace_back(name);
    name_indexes_.emplace(std::string(name), index);
    return index;
}

void outside_allocations::add_event(const outside_record& record) {
    if (events_.size() < max_outside_events) {
        events_.push_back(record);
    } else {
        ++dropped_;
    }
}

bool outside_allocations::add(outside_record record, std::string_view call,
                              std::string_view library) {
    std::lock_guard lock(mutex_);
    record.call = name_index(call);
    record.library = name_index(library);
    if (!live_.try_emplace({record.kind, record.address}, record).second) {
        return false;
    }
    add_event(record);
    return true;
}

std::optional<outside_record> outside_allocations::remove(snapshot::outside_kind kind,
                                                          device_address address,
                                                          stream_handle stream, int64_t time_ns,
                                                          uint64_t context) {
    std::lock_guard lock(mutex_);
    const auto it = live_.find({kind, address});
    if (it == live_.end()) {
        return std::nullopt;
    }
    outside_record freed = it->second;
    live_.erase(it);
    outside_record event = freed;
    event.is_free = true;
    event.stream = stream;
    event.time_ns = time_ns;
    event.context = context;
    add_event(event);
    return freed;
}

outside_allocations::contents outside_allocations::copy() const {
    std::lock_guard lock(mutex_);
    contents out{events_, dropped_, {}, names_};
    out.live.reserve(live_.size());
    for (const auto& [key, record] : live_) {
        out.live.push_back(record);
    }
    return out;
}

std::vector<snapshot::library_bytes> outside_allocations::device_bytes_by_library(
    int device) const {
    std::lock_guard lock(mutex_);
    std::map<uint32_t, uint64_t> by_index;
    for (const auto& [key, record] : live_) {
        if (record.kind == snapshot::outside_kind::device && record.device == device) {
            by_index[record.library] += record.size;
        }
    }
    std::vector<snapshot::library_bytes> out;
    for (const auto& [index, bytes] : by_index) {
        out.emplace_back(names_[index], bytes);
    }
    std::stable_sort(out.begin(), out.end(),
                     [](const auto& a, const auto& b) { return a.second > b.second; });
    return out;
}

uint64_t outside_allocations::pinned_host_bytes() const {
    std::lock_guard lock(mutex_);
    uint64_t sum = 0;
    for (const auto& [key, record] : live_) {
        if (record.kind == snapshot::outside_kind::pinned_host) {
            sum += record.size;
        }
    }
    return sum;
}

}  // namespace detail

namespace {

uint64_t at_least_zero(uint64_t from, uint64_t take) {
    return from > take ? from - take : 0;
}

}  // namespace

[[gnu::noinline]] void recorder::record_outside_allocation(const outside_call& call,
                                                           size_t wrapper_frames) {
    history(call.device);
    if (call.address == 0) {
        throw std::invalid_argument("memtrail: an outside allocation at NULL");
    }
    const context_handle context = capture_context(call.device, false, wrapper_frames);
    const detail::outside_record record{.is_free = false,
                                        .kind = call.kind,
                                        .device = call.device,
                                        .address = call.address,
                                        .size = call.size,
                                        .stream = call.stream,
                                        .time_ns = detail::fast_now_ns(),
                                        .context = context};
    const std::string library = snapshot::library_of_module(call.caller_module);
    if (!outside_->add(record, call.call, library.empty() ? "unknown" : library)) {
        throw std::invalid_argument("memtrail: an outside " +
                                    std::string(snapshot::outside_kind_name(call.kind)) +
                                    " allocation at " + std::to_string(call.address) +
                                    " is already live (record its free first)");
    }
}

[[gnu::noinline]] std::optional<std::pair<int, uint64_t>> recorder::record_outside_free(
    snapshot::outside_kind kind, device_address address, int device, stream_handle stream,
    size_t wrapper_frames) {
    history(device);
    const context_handle context = capture_context(device, true, wrapper_frames);
    const auto freed = outside_->remove(kind, address, stream, detail::fast_now_ns(), context);
    if (!freed) {
        return std::nullopt;
    }
    return std::pair(freed->device, freed->size);
}

uint64_t recorder::outside_device_bytes(int device) const {
    uint64_t sum = 0;
    for (const auto& [library, bytes] : outside_->device_bytes_by_library(device)) {
        sum += bytes;
    }
    return sum;
}

void recorder::record_accounting(std::string_view moment, int device, const device_usage& usage) {
    history(device);
    snapshot::memory_accounting row;
    row.moment = std::string(moment);
    row.device = static_cast<int8_t>(device);
    row.time_ns = detail::fast_now_ns();
    row.device_total = usage.total;
    row.device_used = usage.used;
    const device_stats stats = allocator_.on(device).stats();
    row.allocator_reserved = static_cast<uint64_t>(std::max<int64_t>(
        0, stats.reserved_bytes[static_cast<size_t>(stat_type::aggregate)].current));
    row.outside_by_library = outside_->device_bytes_by_library(device);
    row.pinned_host = outside_->pinned_host_bytes();
    const uint64_t this_allocator_and_outside = row.allocator_reserved + row.outside();
    if (usage.this_process) {
        row.context = at_least_zero(*usage.this_process, this_allocator_and_outside);
        row.other_processes = at_least_zero(usage.used, *usage.this_process);
    } else {
        row.context = at_least_zero(usage.used, this_allocator_and_outside);
        row.unsplit = usage.unsplit;
    }
    std::lock_guard lock(accounting_mutex_);
    accounting_.push_back(std::move(row));
}

void recorder::set_usage_source(std::function<std::optional<device_usage>(int device)> source) {
    std::lock_guard lock(accounting_mutex_);
    usage_source_ = std::move(source);
}

void recorder::add_outside_memory(snapshot::snapshot& out,
                                  const std::function<snapshot::stack_id(uint64_t)>& stack_of) {
    std::function<std::optional<device_usage>(int)> source;
    {
        std::lock_guard lock(accounting_mutex_);
        source = usage_source_;
    }
    for (int d = 0; source && d < allocator_.device_count(); ++d) {
        if (const std::optional<device_usage> usage = source(d)) {
            record_accounting("snapshot", d, *usage);
        }
    }
    const detail::outside_allocations::contents contents = outside_->copy();
    std::vector<snapshot::string_id> names;
    for (const std::string& name : contents.names) {
        names.push_back(out.intern_string(name));
    }
    const auto convert = [&](const detail::outside_record& r) {
        return snapshot::outside_event{.is_free = r.is_free,
                                       .kind = r.kind,
                                       .device = static_cast<int8_t>(r.device),
                                       .address = r.address,
                                       .size = r.size,
                                       .stream = r.stream,
                                       .time_ns = r.time_ns,
                                       .call = names[r.call],
                                       .library = names[r.library],
                                       .stack = stack_of(r.context)};
    };
    for (const detail::outside_record& r : contents.events) {
        out.outside.events.push_back(convert(r));
    }
    for (const detail::outside_record& r : contents.live) {
        out.outside.live.push_back(convert(r));
    }
    out.outside.dropped = contents.dropped;
    std::lock_guard lock(accounting_mutex_);
    out.outside.accounting = accounting_;
}

}  // namespace memtrail::recorder
