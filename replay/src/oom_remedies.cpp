#include "memtrail/replay/oom_remedies.hpp"

#include <algorithm>

namespace memtrail::replay {

namespace {

// oom_entries are in trace order, so a lookup is a binary search (a trace of many OOMs stays
// linear-logarithmic).
bool fails_at(const replay_result& result, size_t entry) {
    return std::binary_search(result.oom_entries.begin(), result.oom_entries.end(), entry);
}

}  // namespace

oom_remedies try_oom_remedies(const snapshot::snapshot& input, size_t entry,
                              const oom_remedy_options& options) {
    const allocator_config original = allocator_config::parse(input.settings.conf);
    uint64_t total = options.device_memory;
    for (const auto& d : input.info.devices) {
        if (!total && d.device == options.device) {
            total = d.total_memory;
        }
    }
    double fraction = options.memory_fraction;
    if (fraction == 0.0 && options.cap_bytes && total) {
        // Half a byte above, so that the allocator's truncation gives the cap itself.
        fraction = (static_cast<double>(options.cap_bytes) + 0.5) / static_cast<double>(total);
    }
    auto run = [&](const allocator_config& config, double memory_fraction,
                   bool release_pools = false) {
        replay_options o;
        o.config = config;
        o.device = options.device;
        o.device_memory = total;
        o.memory_fraction = memory_fraction;
        o.reuse_trace_addresses = false;
        if (release_pools) {
            o.release_private_pools_before = entry;
        }
        return replay_trace(input, o);
    };

    oom_remedies out;
    const replay_result baseline = run(original, fraction);
    out.baseline_first_oom = baseline.first_oom_entry;
    out.baseline_reproduces = fails_at(baseline, entry);

    struct candidate {
        std::string description;
        std::string extra_setting;  // appended to the original settings
        double memory_fraction;
        remedy_kind kind = remedy_kind::allocator_setting;
    };
    std::vector<candidate> candidates;
    if (options.try_releasing_private_pools) {
        candidates.push_back(
            {"the private pools released (their CUDA graphs or MemPools deleted) before it", "",
             fraction, remedy_kind::release_private_pools});
    }
    if (!original.expandable_segments) {
        candidates.push_back({"expandable_segments:True", "expandable_segments:True", fraction});
    }
    if (original.max_split_size == UINT64_MAX) {
        candidates.push_back({"max_split_size_mb:128", "max_split_size_mb:128", fraction});
    }
    if (fraction > 0.0) {
        candidates.push_back({"no memory cap", "", 0.0, remedy_kind::no_memory_cap});
        if (original.garbage_collection_threshold == 0.0) {
            candidates.push_back(
                {"garbage_collection_threshold:0.6", "garbage_collection_threshold:0.6", fraction});
        }
    }
    for (const candidate& c : candidates) {
        std::string conf = input.settings.conf;
        if (!c.extra_setting.empty()) {
            conf += (conf.empty() ? "" : ",") + c.extra_setting;
        }
        const replay_result result = run(allocator_config::parse(conf), c.memory_fraction,
                                         c.kind == remedy_kind::release_private_pools);
        oom_remedy& remedy = out.remedies.emplace_back();
        remedy.description = c.description;
        remedy.kind = c.kind;
        remedy.first_oom_entry = result.first_oom_entry;
        // It must not trade this OOM for an earlier one the original did not have.
        const bool new_failure_before =
            std::any_of(result.oom_entries.begin(), result.oom_entries.end(),
                        [&](size_t at) { return at < entry && !fails_at(baseline, at); });
        remedy.avoids = !fails_at(result, entry) && !new_failure_before;
        remedy.peak_reserved = result.peak_reserved;
        remedy.peak_allocated = result.peak_allocated;
    }
    return out;
}

}  // namespace memtrail::replay
