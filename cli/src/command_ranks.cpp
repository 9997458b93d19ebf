// memtrail ranks FILE... : the snapshots of a distributed job's ranks side by side, one row per
// rank: peaks and when, the end, allocations, device allocations and OOMs.

#include <algorithm>
#include <cstdio>
#include <iostream>

#include "commands.hpp"
#include "common.hpp"
#include "memtrail/analysis/rank_overview.hpp"
#include "memtrail/analysis/size_text.hpp"
#include "report_json.hpp"
#include "text_table.hpp"

namespace memtrail::cli {
namespace {

using analysis::format_bytes;

struct rank_row {
    int rank = 0;
    opened_file file;
    analysis::rank_overview overview;
};

// "entry 102, +1.250s": the time counts from the rank's first entry, and is left out when the
// trace has no times.
std::string when(const analysis::rank_overview& o, const analysis::curve_peak& peak) {
    std::string text = position_label(peak.position);
    if (o.entries > 0 && o.first_time_ns != 0) {
        char seconds[32];
        std::snprintf(seconds, sizeof seconds, ", +%.3fs",
                      static_cast<double>(peak.time_ns - o.first_time_ns) / 1e9);
        text += seconds;
    }
    return text;
}

size_t highest_peak(const std::vector<rank_row>& rows) {
    std::vector<const analysis::device_model*> models;
    for (const auto& r : rows) {
        models.push_back(&r.file.model);
    }
    return highest_reserved_peak(models);
}

analysis::rank_totals totals_of(const std::vector<rank_row>& rows) {
    analysis::rank_totals t;
    for (const auto& r : rows) {
        analysis::add_to(t, r.overview);
    }
    return t;
}

void print_table(const std::vector<rank_row>& rows) {
    text_table table({"rank", "<file", "<device", "peak allocated", "<when", "peak reserved",
                      "<when", "end allocated", "end reserved", "allocs", "segment allocs",
                      "OOMs"});
    for (const auto& r : rows) {
        const analysis::rank_overview& o = r.overview;
        table.add_row({std::to_string(r.rank), r.file.path, analysis::devices_text(o),
                       format_bytes(o.peak_allocated.bytes), when(o, o.peak_allocated),
                       format_bytes(o.peak_reserved.bytes), when(o, o.peak_reserved),
                       format_bytes(o.end_allocated), format_bytes(o.end_reserved),
                       std::to_string(o.allocations), std::to_string(o.device_allocations),
                       std::to_string(o.ooms)});
    }
    if (rows.size() > 1) {
        const analysis::rank_totals t = totals_of(rows);
        table.add_row({"total", std::to_string(rows.size()) + " ranks", "",
                       format_bytes(t.peak_allocated), "", format_bytes(t.peak_reserved), "",
                       format_bytes(t.end_allocated), format_bytes(t.end_reserved),
                       std::to_string(t.allocations), std::to_string(t.device_allocations),
                       std::to_string(t.ooms)});
    }
    table.print(std::cout);
    const rank_row& best = rows[highest_peak(rows)];
    const analysis::rank_overview& o = best.overview;
    std::cout << "\nrank " << best.rank << " (" << best.file.path
              << ") peaks highest: " << format_bytes(o.peak_reserved.bytes) << " reserved at "
              << when(o, o.peak_reserved) << "\n";
    const auto most = std::max_element(rows.begin(), rows.end(), [](const auto& x, const auto& y) {
        return x.overview.peak_allocated.bytes < y.overview.peak_allocated.bytes;
    });
    if (most->overview.peak_allocated.bytes > o.peak_allocated.bytes) {
        std::cout << "rank " << most->rank << " (" << most->file.path
                  << ") has the largest allocated peak: "
                  << format_bytes(most->overview.peak_allocated.bytes) << " at "
                  << when(most->overview, most->overview.peak_allocated) << "\n";
    }
}

void write_peak(json_writer& json, const analysis::rank_overview& o,
                const analysis::curve_peak& peak) {
    json.begin_object()
        .field("bytes", peak.bytes)
        .field("position", static_cast<uint64_t>(peak.position))
        .field("label", position_label(peak.position))
        .field("time_ns", peak.time_ns)
        .field("since_first_entry_ns", o.entries > 0 ? peak.time_ns - o.first_time_ns : 0)
        .end_object();
}

void print_json(const std::vector<rank_row>& rows) {
    json_writer json(std::cout);
    json.begin_object().key("ranks").begin_array();
    for (const auto& r : rows) {
        const analysis::rank_overview& o = r.overview;
        json.begin_object()
            .field("rank", r.rank)
            .field("path", r.file.path)
            .field("kind", file_kind_name(r.file.kind))
            .field("device", o.device);
        json.key("devices").begin_array();
        for (const int d : o.devices) {
            json.value(d);
        }
        json.end_array().field("entries", static_cast<uint64_t>(o.entries));
        json.key("peak_allocated");
        write_peak(json, o, o.peak_allocated);
        json.key("peak_reserved");
        write_peak(json, o, o.peak_reserved);
        json.field("end_allocated", o.end_allocated)
            .field("end_reserved", o.end_reserved)
            .field("allocations", o.allocations)
            .field("device_allocations", o.device_allocations)
            .field("ooms", o.ooms);
        json.key("reconstruction");
        write_reconstruction(json, r.file.model);
        json.end_object();
    }
    json.end_array();
    const analysis::rank_totals t = totals_of(rows);
    json.key("total")
        .begin_object()
        .field("peak_allocated", t.peak_allocated)
        .field("peak_reserved", t.peak_reserved)
        .field("end_allocated", t.end_allocated)
        .field("end_reserved", t.end_reserved)
        .field("allocations", t.allocations)
        .field("device_allocations", t.device_allocations)
        .field("ooms", t.ooms)
        .end_object();
    const rank_row& best = rows[highest_peak(rows)];
    json.key("highest_peak")
        .begin_object()
        .field("rank", best.rank)
        .field("path", best.file.path)
        .field("peak_reserved", best.overview.peak_reserved.bytes)
        .end_object();
    json.end_object();
}

}  // namespace

command_spec ranks_spec() {
    return {"ranks",
            "FILE... [--device N] [--json]",
            "The snapshots of a distributed job's ranks side by side, one row per rank: peak "
            "allocated and reserved memory and when, allocated and reserved at the end, "
            "allocations, device allocations (segments allocated or mapped) and OOMs in the "
            "trace, with their totals and the rank that peaks highest.",
            "A file's rank is the number its path names (rank3.memtrail, trace_rank_3.pickle, "
            "run/rank3/snapshot.pickle) when every path names a different one; otherwise the "
            "files are ranks 0, 1, 2, ... in the order given. Rows are listed by rank. Times "
            "count from each rank's first trace entry; counts cover the trace.\n",
            1,
            SIZE_MAX,
            {device_option()}};
}

int run_ranks(const parsed_arguments& args) {
    const std::vector<int> ranks = analysis::ranks_of_paths(args.positional);
    std::vector<rank_row> rows;
    for (size_t i = 0; i < args.positional.size(); ++i) {
        rank_row r{ranks[i], open_file(args.positional[i], args), {}};
        r.overview = analysis::overview_of(r.file.model);
        rows.push_back(std::move(r));
    }
    std::stable_sort(rows.begin(), rows.end(),
                     [](const rank_row& a, const rank_row& b) { return a.rank < b.rank; });
    if (args.json) {
        print_json(rows);
    } else {
        print_table(rows);
    }
    return exit_ok;
}

}  // namespace memtrail::cli
