#include "memtrail/analysis/oom_remedy_text.hpp"

#include <algorithm>

#include "memtrail/analysis/size_text.hpp"

namespace memtrail::analysis {

std::string_view remedy_kind_key(remedy_kind kind) {
    switch (kind) {
        case remedy_kind::allocator_setting:
            return "allocator_setting";
        case remedy_kind::no_memory_cap:
            return "no_memory_cap";
        case remedy_kind::release_private_pools:
            return "release_private_pools";
    }
    return "unknown";
}

std::optional<remedy_kind> remedy_kind_from_key(std::string_view key) {
    for (const remedy_kind kind : {remedy_kind::allocator_setting, remedy_kind::no_memory_cap,
                                   remedy_kind::release_private_pools}) {
        if (remedy_kind_key(kind) == key) {
            return kind;
        }
    }
    return std::nullopt;
}

std::string replay_assumptions(const oom_report& r) {
    std::string text = "on a device of " + format_bytes(r.assumed_device_total) +
                       (r.total_source == device_total_source::at_least
                            ? " (the least it can have: reserved + free)"
                            : " (" + std::string(device_total_source_name(r.total_source)) + ")");
    if (r.cap.recorded) {
        text += " under the cap of " + format_bytes(r.cap.lower);
    } else if (r.cap.binding) {
        text += " under the least cap the trace allows, " + format_bytes(r.cap.lower);
    }
    return text;
}

std::string remedies_heading(const oom_report& r) {
    return "remedies, each checked by replaying the trace under it " + replay_assumptions(r) + ":";
}

std::string_view remedies_not_checked_text() {
    return "remedies: not checked: replaying the trace under its own settings did not fail at "
           "this entry, so a what-if replay proves nothing here";
}

std::string remedy_sentence(const remedy_outcome& remedy) {
    return "with " + remedy.setting + " this OOM " +
           (remedy.avoids ? "does not happen" : "still happens") + " (peak reserved " +
           format_bytes(remedy.peak_reserved) + ")";
}

std::optional<std::string> remedies_conclusion(const oom_report& r,
                                               std::span<const remedy_outcome> remedies) {
    const auto avoided_by = [&](remedy_kind kind) {
        return std::any_of(remedies.begin(), remedies.end(), [&](const remedy_outcome& remedy) {
            return remedy.avoids && remedy.kind == kind;
        });
    };
    if (avoided_by(remedy_kind::allocator_setting)) {
        return std::nullopt;
    }
    std::string what_does;
    if (avoided_by(remedy_kind::release_private_pools)) {
        what_does = "release the private pools above (delete the graphs or MemPools)";
    } else if (avoided_by(remedy_kind::no_memory_cap)) {
        what_does = "raise the cap to at least " +
                    format_bytes(r.totals.reserved + r.segment_size) +
                    " (what the request needed)" +
                    (r.verdict == oom_verdict::fragmentation
                         ? ", or free the live blocks that pin the free pieces (the blockers)"
                         : ", or reduce the memory in use");
    } else if (r.verdict == oom_verdict::outside_allocator) {
        what_does = "free what others hold on the device, or reduce the memory in use";
    } else {
        what_does = "reduce the memory in use";
    }
    return std::string("no allocator setting avoids it") + (r.cap.binding ? " under the cap" : "") +
           ": " + what_does;
}

}  // namespace memtrail::analysis
