#include "memtrail/analysis/rank_overview.hpp"

namespace memtrail::analysis {

curve_peak peak_of(const device_model& model, series s) {
    const size_t position = model.peak_position(s);
    return {model.values(s)[position], position, model.time_at(position)};
}

rank_overview overview_of(const device_model& model) {
    rank_overview overview;
    overview.device = model.device();
    overview.devices = devices_of(model.source());
    overview.entries = model.event_count();
    overview.first_time_ns = model.time_at(0);
    overview.peak_allocated = peak_of(model, series::allocated);
    overview.peak_reserved = peak_of(model, series::reserved);
    overview.end_allocated = model.values(series::allocated).back();
    overview.end_reserved = model.values(series::reserved).back();
    const device_stats stats = model.state_after(model.event_count()).stats;
    overview.allocations = stats.allocation[static_cast<size_t>(stat_type::aggregate)].allocated;
    overview.device_allocations = stats.num_device_alloc;
    overview.ooms = stats.num_ooms;
    return overview;
}

std::string devices_text(const rank_overview& rank) {
    std::string text = std::to_string(rank.device);
    if (rank.devices.size() > 1) {
        std::string all;
        for (const int d : rank.devices) {
            all += (all.empty() ? "" : ",") + std::to_string(d);
        }
        text += " of " + all;
    }
    return text;
}

rank_totals& rank_totals::operator+=(const rank_totals& other) {
    peak_allocated += other.peak_allocated;
    peak_reserved += other.peak_reserved;
    end_allocated += other.end_allocated;
    end_reserved += other.end_reserved;
    allocations += other.allocations;
    device_allocations += other.device_allocations;
    ooms += other.ooms;
    return *this;
}

void add_to(rank_totals& totals, const rank_overview& rank) {
    totals += rank_totals(rank.peak_allocated.bytes, rank.peak_reserved.bytes, rank.end_allocated,
                          rank.end_reserved, rank.allocations, rank.device_allocations, rank.ooms);
}

}  // namespace memtrail::analysis
