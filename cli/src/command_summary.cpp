// memtrail summary FILE... : the memory picture at one moment, per rank side by side.

#include <algorithm>
#include <iostream>

#include "detail/commands.hpp"
#include "detail/common.hpp"
#include "detail/report_json.hpp"
#include "detail/text_table.hpp"
#include "memtrail/analysis/entry_tags.hpp"
#include "memtrail/analysis/outside_accounting.hpp"
#include "memtrail/analysis/rank_jobs.hpp"
#include "memtrail/analysis/size_text.hpp"
#include "memtrail/rules/statistics.hpp"

namespace memtrail::cli {
namespace {

using analysis::format_bytes;

struct rank_report {
    opened_file file;
    moment at;
    analysis::memory_state state;
    analysis::memory_totals totals;
};

size_t highest_peak(const std::vector<rank_report>& ranks) {
    std::vector<const analysis::device_model*> models;
    for (const auto& r : ranks) {
        models.push_back(&r.file.model);
    }
    return highest_reserved_peak(models);
}

// PyTorch's tags on the entries (the user's metadata, torch.compile's regions), each value
// once, in order of first use.
void print_tags(const analysis::device_model& model) {
    constexpr size_t shown = 12;
    const auto tags = analysis::summarize_tags(model, analysis::tag_ranges(model));
    if (tags.empty()) {
        return;
    }
    std::cout << "\n  PyTorch's tags on the entries:\n";
    text_table table({"<", "<", "<", "", "", "<"});
    for (size_t i = 0; i < std::min(tags.size(), shown); ++i) {
        const auto& t = tags[i];
        table.add_row({std::string(analysis::tag_kind_name(t.kind)), printable(t.value),
                       "entries " + std::to_string(t.first) + "-" + std::to_string(t.last),
                       std::to_string(t.entries) + " entries",
                       format_bytes(t.allocated) + " allocated",
                       t.runs == 1 ? "" : std::to_string(t.runs) + " runs"});
    }
    table.print(std::cout, "    ");
    if (tags.size() > shown) {
        std::cout << "    ... " << tags.size() - shown << " more\n";
    }
}

void write_tags(json_writer& json, const analysis::device_model& model) {
    json.begin_array();
    for (const auto& t : analysis::summarize_tags(model, analysis::tag_ranges(model))) {
        json.begin_object()
            .field("kind", analysis::tag_kind_name(t.kind))
            .field("value", t.value)
            .field("first", static_cast<uint64_t>(t.first))
            .field("last", static_cast<uint64_t>(t.last))
            .field("runs", static_cast<uint64_t>(t.runs))
            .field("entries", static_cast<uint64_t>(t.entries))
            .field("allocated", t.allocated)
            .end_object();
    }
    json.end_array();
}

// The largest allocations outside the allocator still live, with who made them.
void print_largest_outside(const snapshot::snapshot& source, int device) {
    constexpr size_t shown = 5;
    std::vector<const snapshot::outside_event*> live;
    for (const auto& e : source.outside.live) {
        if (e.kind != snapshot::outside_kind::pinned_host && e.device == device) {
            live.push_back(&e);
        }
    }
    if (live.empty()) {
        return;
    }
    std::stable_sort(live.begin(), live.end(),
                     [](const auto* a, const auto* b) { return a->size > b->size; });
    std::cout << "    the largest outside it:\n";
    text_table table({"", "<", "<", "<"});
    for (size_t i = 0; i < std::min(live.size(), shown); ++i) {
        const snapshot::outside_event& e = *live[i];
        table.add_row({format_bytes(e.size), std::string(source.string_at(e.library)),
                       std::string(source.string_at(e.call)),
                       "at " + innermost_frame(source, e.stack)});
    }
    table.print(std::cout, "      ");
    if (live.size() > shown) {
        std::cout << "      ... " << live.size() - shown << " more\n";
    }
}

// Every byte of the device: what memtrail run measured when the snapshot was taken (or last
// before it), and the pinned host memory apart.
void print_accounting(const analysis::device_model& model) {
    const snapshot::snapshot& source = model.source();
    if (const auto* a = analysis::latest_accounting(source, model.device())) {
        std::cout << "\n  device memory used " << format_bytes(a->device_used) << " of "
                  << format_bytes(a->device_total) << " at the " << a->moment << ":\n    "
                  << wrap_text("the allocator reserved " + format_bytes(a->allocator_reserved) +
                                   "; outside the allocator: " + analysis::outside_split_text(*a),
                               86, "    ");
    }
    print_largest_outside(source, model.device());
    const auto pinned = analysis::pinned_host_by_library(source);
    if (!pinned.empty()) {
        std::string text;
        for (const auto& [library, bytes] : pinned) {
            text += (text.empty() ? "" : ", ") + library + " " + format_bytes(bytes);
        }
        std::cout << "  pinned host memory (host, not device memory): " << text << "\n";
    }
}

void write_accounting(json_writer& json, const snapshot::memory_accounting& a) {
    json.begin_object()
        .field("moment", a.moment)
        .field("device_total", a.device_total)
        .field("device_used", a.device_used)
        .field("allocator_reserved", a.allocator_reserved);
    json.key("outside_by_library").begin_object();
    for (const auto& [library, bytes] : a.outside_by_library) {
        json.field(library, bytes);
    }
    json.end_object()
        .field("context", a.context)
        .field("other_processes", a.other_processes)
        .field("unsplit", a.unsplit)
        .field("pinned_host", a.pinned_host)
        .end_object();
}

void print_one(const rank_report& r, bool abbreviated) {
    const auto& model = r.file.model;
    const auto& t = r.totals;
    std::cout << r.file.path << " (" << file_kind_name(r.file.kind) << "), device "
              << model.device() << ", " << model.event_count() << " trace entries";
    if (const auto* trace = model.source().find_trace(model.device());
        trace != nullptr && trace->dropped != 0) {
        std::cout << " (" << trace->dropped << " dropped before them)";
    }
    std::cout << ", at " << r.at.label << "\n\n";
    text_table table({"<", "", "<"});
    table.add_row({"reserved", format_bytes(t.reserved), std::to_string(t.segments) + " segments"});
    table.add_row(
        {"allocated", format_bytes(t.allocated), std::to_string(t.allocated_blocks) + " blocks"});
    table.add_row({"pending free", format_bytes(t.pending_free),
                   std::to_string(t.pending_free_blocks) + " blocks waiting for other streams"});
    table.add_row(
        {"free in segments", format_bytes(t.free),
         std::to_string(t.free_blocks) + " blocks, largest " + format_bytes(t.largest_free)});
    table.add_row({"requested", format_bytes(t.requested), "by callers, of the active blocks"});
    table.add_row({"rounding waste", format_bytes(t.rounding_waste), "block size - requested"});
    table.add_row({"fragmentation", percent(t.fragmentation()), "1 - largest free / free"});
    const std::pair<const char*, analysis::series> peaks[] = {
        {"peak allocated", analysis::series::allocated},
        {"peak active", analysis::series::active},
        {"peak reserved", analysis::series::reserved}};
    for (const auto& [name, s] : peaks) {
        table.add_row({name, format_bytes(peak_bytes(model, s)),
                       "at " + position_label(model.peak_position(s))});
    }
    table.print(std::cout, "  ");
    print_accounting(model);
    print_categories_line(model_with_every_frame(r.file), r.at, "\n  ");
    print_tags(model);
    const auto& report = model.report();
    if (report.anomalies != 0 || !report.matches_final_segments) {
        std::cout << "\n  note: " << report.anomalies
                  << " trace entries did not fit the reconstructed state (first: entry "
                  << report.first_anomaly << ")";
        if (!report.matches_final_segments) {
            std::cout << "; replaying to the end differs from the snapshot: "
                      << report.first_difference;
        }
        std::cout << "\n";
    }
    std::cout << "\n" << analysis::format_summary(r.state, abbreviated);
}

void print_side_by_side(const std::vector<rank_report>& ranks) {
    std::vector<std::string> columns = {"<"};
    for (size_t i = 0; i < ranks.size(); ++i) {
        columns.push_back("rank " + std::to_string(i));
    }
    text_table table(columns);
    auto row = [&](const std::string& name, auto cell) {
        std::vector<std::string> cells = {name};
        for (const auto& r : ranks) {
            cells.push_back(cell(r));
        }
        table.add_row(cells);
    };
    row("at", [](const rank_report& r) { return r.at.label; });
    row("trace entries",
        [](const rank_report& r) { return std::to_string(r.file.model.event_count()); });
    row("reserved", [](const rank_report& r) { return format_bytes(r.totals.reserved); });
    row("allocated", [](const rank_report& r) { return format_bytes(r.totals.allocated); });
    row("pending free", [](const rank_report& r) { return format_bytes(r.totals.pending_free); });
    row("free in segments", [](const rank_report& r) { return format_bytes(r.totals.free); });
    row("rounding waste",
        [](const rank_report& r) { return format_bytes(r.totals.rounding_waste); });
    row("fragmentation", [](const rank_report& r) { return percent(r.totals.fragmentation()); });
    row("peak allocated", [](const rank_report& r) {
        return format_bytes(peak_bytes(r.file.model, analysis::series::allocated));
    });
    row("peak reserved", [](const rank_report& r) {
        return format_bytes(peak_bytes(r.file.model, analysis::series::reserved));
    });
    for (size_t i = 0; i < ranks.size(); ++i) {
        std::cout << "rank " << i << ": " << ranks[i].file.path << ", device "
                  << ranks[i].file.model.device() << "\n";
    }
    std::cout << "\n";
    table.print(std::cout);
    const size_t best = highest_peak(ranks);
    const auto& model = ranks[best].file.model;
    std::cout << "\nrank " << best << " (" << analysis::file_name_of(ranks[best].file.path)
              << ") peaks highest: " << format_bytes(peak_bytes(model, analysis::series::reserved))
              << " reserved at " << position_label(model.peak_position(analysis::series::reserved))
              << "\n";
}

void print_json(const std::vector<rank_report>& ranks) {
    json_writer json(std::cout);
    json.begin_object().key("ranks").begin_array();
    for (size_t i = 0; i < ranks.size(); ++i) {
        const rank_report& r = ranks[i];
        const auto& model = r.file.model;
        const auto* trace = model.source().find_trace(model.device());
        json.begin_object()
            .field("rank", static_cast<uint64_t>(i))
            .field("path", r.file.path)
            .field("kind", file_kind_name(r.file.kind))
            .field("device", model.device())
            .field("entries", static_cast<uint64_t>(model.event_count()))
            .field("dropped", trace != nullptr ? trace->dropped : uint64_t{0});
        json.key("at");
        write_moment(json, model, r.at);
        json.key("totals");
        write_totals(json, r.totals);
        json.key("peaks");
        write_peaks(json, model);
        json.key("reconstruction");
        write_reconstruction(json, model);
        json.key("categories");
        write_categories(json, model_with_every_frame(r.file), r.at);
        json.key("tags");
        write_tags(json, model);
        if (const auto* a = analysis::latest_accounting(model.source(), model.device())) {
            json.key("accounting");
            write_accounting(json, *a);
        }
        json.key("memory_stats").begin_object();
        for (const auto& [name, value] : to_memory_stats(r.state.stats)) {
            json.field(name, value);
        }
        json.end_object().end_object();
    }
    json.end_array();
    const size_t best = highest_peak(ranks);
    json.key("highest_peak")
        .begin_object()
        .field("rank", static_cast<uint64_t>(best))
        .field("path", ranks[best].file.path)
        .field("peak_reserved", peak_bytes(ranks[best].file.model, analysis::series::reserved))
        .end_object();
    json.end_object();
}

}  // namespace

command_spec summary_spec() {
    return {"summary",
            "FILE... [--at EVENT|peak|end] [--device N] [--abbreviated] [--json]",
            "The memory picture at one moment: reserved, allocated, pending and free bytes, "
            "fragmentation, peaks, and PyTorch's memory_summary() table recomputed from the "
            "trace. Several files (one per rank) are reported side by side.",
            "Counters in the memory_summary table count from the first trace entry; they equal "
            "PyTorch's own when the trace starts from an empty allocator.\n",
            1,
            SIZE_MAX,
            {at_option(),
             device_option(),
             {"--abbreviated", "", "", "print the short memory_summary table", false}}};
}

int run_summary(const parsed_arguments& args) {
    std::vector<rank_report> ranks;
    const auto add = [&](opened_file file) {
        rank_report r{std::move(file), {}, {}, {}};
        r.at = resolve_at(r.file.model, args.value("--at"));
        r.state = r.file.model.state_after(r.at.position);
        r.totals = analysis::totals_of(r.state);
        ranks.push_back(std::move(r));
    };
    // One file of several devices (one process's GPUs) is summarized device by device.
    const bool one_file = args.positional.size() == 1;
    if (one_file) {
        for (opened_file& device : open_every_device(args.positional[0], args)) {
            add(std::move(device));
        }
    } else {
        for (const auto& path : args.positional) {
            add(open_file(path, args));
        }
    }
    if (args.json) {
        print_json(ranks);
    } else if (one_file) {
        for (size_t i = 0; i < ranks.size(); ++i) {
            std::cout << (i == 0 ? "" : "\n");
            print_one(ranks[i], args.has("--abbreviated"));
        }
    } else {
        print_side_by_side(ranks);
    }
    return exit_ok;
}

}  // namespace memtrail::cli
