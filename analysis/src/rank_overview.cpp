#include "memtrail/analysis/rank_overview.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <set>

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

void add_to(rank_totals& totals, const rank_overview& rank) {
    totals.peak_allocated += rank.peak_allocated.bytes;
    totals.peak_reserved += rank.peak_reserved.bytes;
    totals.end_allocated += rank.end_allocated;
    totals.end_reserved += rank.end_reserved;
    totals.allocations += rank.allocations;
    totals.device_allocations += rank.device_allocations;
    totals.ooms += rank.ooms;
}

std::optional<int> rank_in_path(std::string_view path) {
    auto lower = [](char c) {
        return static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    };
    auto is_letter = [](char c) { return std::isalpha(static_cast<unsigned char>(c)) != 0; };
    auto is_digit = [](char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; };
    std::optional<int> found;
    for (size_t i = 0; i + 4 < path.size(); ++i) {
        const bool word = lower(path[i]) == 'r' && lower(path[i + 1]) == 'a' &&
                          lower(path[i + 2]) == 'n' && lower(path[i + 3]) == 'k' &&
                          (i == 0 || !is_letter(path[i - 1]));
        if (!word) {
            continue;
        }
        size_t digits = i + 4;
        if (digits < path.size() &&
            (path[digits] == '_' || path[digits] == '-' || path[digits] == '.')) {
            ++digits;
        }
        int rank = 0;
        if (digits < path.size() && is_digit(path[digits]) &&
            std::from_chars(path.data() + digits, path.data() + path.size(), rank).ec ==
                std::errc()) {
            found = rank;
        }
    }
    return found;
}

namespace {

// The devices a snapshot lists, by what they are rather than their numbers.
std::vector<std::pair<std::string, uint64_t>> device_kinds(const snapshot::snapshot& s) {
    std::vector<std::pair<std::string, uint64_t>> kinds;
    for (const auto& d : s.info.devices) {
        kinds.emplace_back(d.name, d.total_memory);
    }
    std::sort(kinds.begin(), kinds.end());
    return kinds;
}

// From the first trace entry (or the snapshot's time without one) to when it was taken; nullopt
// when the snapshot holds no times. Entries are oldest first, so only the ends are looked at
// (the Ranks view asks every frame).
std::optional<std::pair<int64_t, int64_t>> time_span(const snapshot::snapshot& s) {
    int64_t first = s.info.time_ns;
    int64_t last = s.info.time_ns;
    const auto timed = [](const snapshot::trace_entry& e) { return e.time_ns != 0; };
    for (const auto& trace : s.traces) {
        const auto oldest = std::find_if(trace.entries.begin(), trace.entries.end(), timed);
        if (oldest == trace.entries.end()) {
            continue;
        }
        const auto newest = std::find_if(trace.entries.rbegin(), trace.entries.rend(), timed);
        first = first == 0 ? oldest->time_ns : std::min(first, oldest->time_ns);
        last = std::max(last, newest->time_ns);
    }
    if (first == 0 && last == 0) {
        return std::nullopt;
    }
    return std::pair{first, last};
}

}  // namespace

std::optional<std::string> why_not_one_job(const snapshot::snapshot& a,
                                           const snapshot::snapshot& b) {
    if (a.info.producer != b.info.producer) {
        return "written by '" + a.info.producer + "', not '" + b.info.producer + "'";
    }
    if (device_kinds(a) != device_kinds(b)) {
        return "other devices (" + std::to_string(a.info.devices.size()) + " against " +
               std::to_string(b.info.devices.size()) + ", or of other names or memory)";
    }
    if (a.settings != b.settings) {
        return "other allocator settings ('" + a.settings.conf + "' against '" + b.settings.conf +
               "')";
    }
    if (a.info.pid != 0 && a.info.pid == b.info.pid && a.info.host == b.info.host) {
        return "the same process (" + a.info.host + ", pid " + std::to_string(a.info.pid) +
               "): two moments of one rank";
    }
    const auto span_a = time_span(a);
    const auto span_b = time_span(b);
    if (span_a && span_b) {
        const int64_t gap =
            std::max(span_a->first, span_b->first) - std::min(span_a->second, span_b->second);
        if (gap > job_time_gap_ns) {
            return "recorded " + std::to_string(gap / 60'000'000'000) +
                   " minutes apart, more than an hour";
        }
    }
    return std::nullopt;
}

std::vector<int> ranks_of_paths(const std::vector<std::string>& paths) {
    std::vector<int> ranks;
    std::set<int> seen;
    for (const std::string& path : paths) {
        const std::optional<int> rank = rank_in_path(path);
        if (!rank || !seen.insert(*rank).second) {
            ranks.clear();
            break;
        }
        ranks.push_back(*rank);
    }
    if (ranks.empty()) {
        for (size_t i = 0; i < paths.size(); ++i) {
            ranks.push_back(static_cast<int>(i));
        }
    }
    return ranks;
}

}  // namespace memtrail::analysis
