// Parity with the original: trace entry by entry in (action, address, size, stream), final
// segments and blocks (address, size, requested_size, state), and the counters.

#include <sstream>

#include "memtrail/replay/replay.hpp"

namespace memtrail::replay {

namespace {

using snapshot::action;

// Replay only reproduces allocator actions; annotations and snapshots of the original are
// not part of the comparison.
bool compared(action a) {
    return a != action::snapshot && a != action::annotation_start && a != action::annotation_end &&
           a != action::annotation_marker;
}

std::string describe(const snapshot::trace_entry& e) {
    std::ostringstream s;
    s << snapshot::action_name(e.kind) << " addr=0x" << std::hex << e.address << std::dec
      << " size=" << e.size << " stream=" << e.stream;
    return s.str();
}

}  // namespace

parity_report compare_with_original(const snapshot::snapshot& original, const replay_result& replay,
                                    const std::map<std::string, int64_t>* expected_stats,
                                    int device) {
    parity_report report;
    std::ostringstream difference;
    auto note = [&](const std::string& what) {
        if (difference.tellp() == 0) {
            difference << what;
        }
    };

    std::vector<const snapshot::trace_entry*> expected, actual;
    if (const auto* t = original.find_trace(device)) {
        for (const auto& e : t->entries) {
            if (compared(e.kind)) {
                expected.push_back(&e);
            }
        }
    }
    if (const auto* t = replay.final_state.find_trace(device)) {
        for (const auto& e : t->entries) {
            if (compared(e.kind)) {
                actual.push_back(&e);
            }
        }
    }
    report.trace_equal = expected.size() == actual.size();
    for (size_t i = 0; i < std::min(expected.size(), actual.size()); ++i) {
        const auto& a = *expected[i];
        const auto& b = *actual[i];
        if (a.kind != b.kind || a.address != b.address || a.size != b.size ||
            a.stream != b.stream) {
            report.trace_equal = false;
            note("trace entry " + std::to_string(i) + ": original " + describe(a) + ", replay " +
                 describe(b));
            break;
        }
    }
    if (expected.size() != actual.size()) {
        note("trace length: original " + std::to_string(expected.size()) + " entries, replay " +
             std::to_string(actual.size()));
    }

    std::vector<const snapshot::segment*> segments_a, segments_b;
    for (const auto& s : original.segments) {
        if (s.device == device) {
            segments_a.push_back(&s);
        }
    }
    for (const auto& s : replay.final_state.segments) {
        if (s.device == device) {
            segments_b.push_back(&s);
        }
    }
    report.segments_equal = segments_a.size() == segments_b.size();
    if (!report.segments_equal) {
        note("segment count: original " + std::to_string(segments_a.size()) + ", replay " +
             std::to_string(segments_b.size()));
    }
    for (size_t i = 0; report.segments_equal && i < segments_a.size(); ++i) {
        const auto& a = *segments_a[i];
        const auto& b = *segments_b[i];
        bool same = a.address == b.address && a.total_size == b.total_size &&
                    a.blocks.size() == b.blocks.size();
        for (size_t k = 0; same && k < a.blocks.size(); ++k) {
            same = a.blocks[k].address == b.blocks[k].address &&
                   a.blocks[k].size == b.blocks[k].size &&
                   a.blocks[k].requested_size == b.blocks[k].requested_size &&
                   a.blocks[k].state == b.blocks[k].state;
        }
        if (!same) {
            report.segments_equal = false;
            std::ostringstream s;
            s << "segment " << i << " at 0x" << std::hex << a.address << std::dec
              << " differs (original " << a.blocks.size() << " blocks, " << a.total_size
              << " bytes; replay " << b.blocks.size() << " blocks, " << b.total_size << " bytes)";
            note(s.str());
        }
    }

    report.stats_equal = true;
    if (expected_stats) {
        for (const auto& [key, value] : *expected_stats) {
            auto it = replay.stats.find(key);
            if (it == replay.stats.end() || it->second != value) {
                report.stats_equal = false;
                note("statistic " + key + ": original " + std::to_string(value) + ", replay " +
                     (it == replay.stats.end() ? std::string("missing")
                                               : std::to_string(it->second)));
            }
        }
    }
    report.first_difference = difference.str();
    return report;
}

}  // namespace memtrail::replay
