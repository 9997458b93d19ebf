#include "detail/report_json.hpp"

#include "memtrail/analysis/frame_text.hpp"

namespace memtrail::cli {

void write_totals(json_writer& json, const analysis::memory_totals& totals) {
    json.begin_object()
        .field("reserved", totals.reserved)
        .field("allocated", totals.allocated)
        .field("pending_free", totals.pending_free)
        .field("active", totals.active())
        .field("free", totals.free)
        .field("largest_free", totals.largest_free)
        .field("requested", totals.requested)
        .field("rounding_waste", totals.rounding_waste)
        .field("fragmentation", totals.fragmentation())
        .field("segments", static_cast<uint64_t>(totals.segments))
        .field("allocated_blocks", static_cast<uint64_t>(totals.allocated_blocks))
        .field("pending_free_blocks", static_cast<uint64_t>(totals.pending_free_blocks))
        .field("free_blocks", static_cast<uint64_t>(totals.free_blocks))
        .end_object();
}

void write_moment(json_writer& json, const analysis::device_model& model, const moment& at) {
    json.begin_object()
        .field("position", static_cast<uint64_t>(at.position))
        .field("label", at.label)
        .field("time_ns", model.time_at(at.position))
        .end_object();
}

void write_peaks(json_writer& json, const analysis::device_model& model) {
    json.begin_object();
    const std::pair<const char*, analysis::series> curves[] = {
        {"allocated", analysis::series::allocated},
        {"active", analysis::series::active},
        {"reserved", analysis::series::reserved}};
    for (const auto& [name, s] : curves) {
        const size_t p = model.peak_position(s);
        json.key(name)
            .begin_object()
            .field("bytes", model.values(s)[p])
            .field("position", static_cast<uint64_t>(p))
            .field("label", position_label(p))
            .end_object();
    }
    json.end_object();
}

void write_reconstruction(json_writer& json, const analysis::device_model& model) {
    const auto& report = model.report();
    json.begin_object()
        .field("anomalies", static_cast<uint64_t>(report.anomalies))
        .field("matches_final_segments", report.matches_final_segments)
        .field("first_difference", report.first_difference)
        .end_object();
}

void write_stack(json_writer& json, const snapshot::snapshot& source, snapshot::stack_id stack) {
    json.begin_array();
    const auto& frames = source.stack_at(stack);
    for (const auto frame : frames) {
        json.value(analysis::frame_label(source, frame));
    }
    json.end_array();
}

}  // namespace memtrail::cli
