// memtrail export FILE --format F -o OUT : the snapshot in other tools' formats, whole or a range
// of its trace.

#include <iostream>

#include "detail/commands.hpp"
#include "detail/common.hpp"
#include "detail/perfetto_trace.hpp"
#include "detail/progress.hpp"
#include "memtrail/analysis/categories.hpp"
#include "memtrail/analysis/flame.hpp"
#include "memtrail/analysis/frame_text.hpp"
#include "memtrail/analysis/size_text.hpp"
#include "memtrail/snapshot/torch_pickle.hpp"

namespace memtrail::cli {
namespace {

using snapshot::action;

// --from A --to B: the entries from the one that brings moment A (entry A itself; start is the
// first entry) to the one that brings moment B, both included; the whole trace by default.
entry_range range_of(const analysis::device_model& model, const parsed_arguments& args) {
    const auto from = args.value("--from");
    const auto to = args.value("--to");
    entry_range range{0, model.event_count(), !from && !to};
    if (from) {
        const size_t position = resolve_at(model, from, "--from").position;
        range.first = position == 0 ? 0 : position - 1;
    }
    if (to) {
        range.end = resolve_at(model, to, "--to").position;
    }
    return range;
}

std::string csv_field(const std::string& text) {
    if (text.find_first_of(",\"\n") == std::string::npos) {
        return text;
    }
    std::string quoted = "\"";
    for (const char c : text) {
        quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
    }
    return quoted + "\"";
}

void write_csv(const analysis::device_model& model, const entry_range& range, std::ostream& out) {
    const snapshot::snapshot& source = model.source();
    out << "index,time_ns,action,address,size,requested_size,stream,allocated,active,reserved,"
           "frame\n";
    const auto& allocated = model.values(analysis::series::allocated);
    const auto& active = model.values(analysis::series::active);
    const auto& reserved = model.values(analysis::series::reserved);
    for (size_t i = range.first; i < range.end; ++i) {
        const snapshot::trace_entry& e = model.entry(i);
        const bool annotated = e.kind == action::annotation_start ||
                               e.kind == action::annotation_end ||
                               e.kind == action::annotation_marker;
        out << i << ',' << e.time_ns << ',' << snapshot::action_name(e.kind) << ',' << e.address
            << ',' << e.size << ',' << e.requested_size << ',' << e.stream << ','
            << allocated[i + 1] << ',' << active[i + 1] << ',' << reserved[i + 1] << ','
            << csv_field(annotated
                             ? std::string(source.string_at(e.name))
                             : (e.stack == snapshot::no_id ? std::string()
                                                           : innermost_frame(source, e.stack)))
            << '\n';
    }
}

}  // namespace

command_spec export_spec() {
    return {
        "export",
        "FILE --format torch-pickle|folded|perfetto|csv -o OUT [--at EVENT|peak|end] "
        "[--from EVENT] [--to EVENT] [--pending] [--device N] [--all-frames]",
        "Writes the snapshot for other tools: a PyTorch snapshot pickle (for "
        "torch.cuda._memory_viz and pytorch.org/memory_viz), folded stacks of the live bytes "
        "at one moment (flamegraph.pl, speedscope), a Perfetto protobuf trace (ui.perfetto.dev) "
        "or a CSV of the trace entries.",
        "folded: one line per stack, 'outer;...;inner BYTES', the live bytes at --at.\n"
        "perfetto: counters for allocated, active and reserved bytes, one slice per "
        "allocation (its memory category as the slice's category), annotations and OOMs; "
        "names and stacks are written once and referred to by id. With --from/--to the "
        "entries of the range and the allocations alive during it.\n"
        "csv: one row per trace entry: index, time_ns, action, address, size, "
        "requested_size, stream, allocated, active, reserved, frame; the memory columns hold "
        "the state after the entry.\n"
        "--from and --to take what --at takes and include both ends: --from 100 --to 200 is "
        "entries 100 to 200. A selection with nothing in it (no entries, no live stack) is an "
        "error and no file is written.\n",
        1,
        1,
        {at_option(),
         device_option(),
         all_frames_option(),
         {"--from", "", "EVENT", "perfetto, csv: the first trace entry to export (default: start)",
          false},
         {"--to", "", "EVENT", "perfetto, csv: the last trace entry to export (default: end)",
          false},
         {"--format", "", "FORMAT", "torch-pickle, folded, perfetto or csv", false},
         {"--output", "-o", "OUT", "the file to write; '-' writes standard output", false},
         {"--pending", "", "", "folded: count blocks waiting for other streams too", false}},
        false};
}

int run_export(const parsed_arguments& args) {
    const auto format = args.value("--format");
    const auto output = args.value("--output");
    if (!format) {
        throw usage_error("--format is required (torch-pickle, folded, perfetto or csv)");
    }
    if (!output) {
        throw usage_error("-o OUT is required ('-o -' writes standard output)");
    }
    if (*format != "torch-pickle" && *format != "folded" && *format != "perfetto" &&
        *format != "csv") {
        throw usage_error("unknown format '" + *format +
                          "' (torch-pickle, folded, perfetto or csv)");
    }
    const bool ranged = args.has("--from") || args.has("--to");
    if (ranged && (*format == "torch-pickle" || *format == "folded")) {
        throw usage_error("--from/--to select trace entries for perfetto and csv; " + *format +
                          (*format == "folded"
                               ? " shows the live bytes at one moment (--at)"
                               : " holds the whole snapshot, as PyTorch's tools rebuild the "
                                 "past from its final segments and its whole trace"));
    }
    if (args.has("--at") && (*format == "perfetto" || *format == "csv")) {
        throw usage_error("--at is for folded; " + *format + " takes a range (--from/--to)");
    }
    // A PyTorch pickle is a conversion: it keeps every frame.
    const opened_file file = open_file(
        args.positional[0], args,
        *format == "torch-pickle" ? analysis::frame_visibility::all_frames : frames_shown(args));
    const std::string& out_path = *output;
    if (*format == "torch-pickle") {
        if (out_path == standard_stream_path) {
            const std::vector<uint8_t> bytes = snapshot::write_torch_pickle(file.model.source());
            write_output(out_path, output_content::binary, [&](std::ostream& out) {
                out.write(reinterpret_cast<const char*>(bytes.data()),
                          static_cast<std::streamsize>(bytes.size()));
            });
        } else {
            try {
                const progress_line progress("writing " + out_path);
                snapshot::write_torch_pickle(file.model.source(), out_path);
            } catch (const std::system_error& e) {
                throw snapshot::load_error(out_path + ": " + e.what());
            }
        }
    } else if (*format == "folded") {
        const moment at = resolve_at(file.model, args.value("--at"));
        const auto measure = args.has("--pending") ? analysis::live_measure::active
                                                   : analysis::live_measure::allocated;
        const std::string folded =
            analysis::to_folded(analysis::flame_at(file.model, at.position, measure));
        if (folded.empty()) {
            throw usage_error("nothing to export: no live allocations on device " +
                              std::to_string(file.model.device()) + " at " + at.label +
                              "; no file written");
        }
        write_output(out_path, output_content::text, [&](std::ostream& out) { out << folded; });
    } else {
        const entry_range range = range_of(file.model, args);
        if (range.empty()) {
            throw usage_error(
                "nothing to export: " +
                (file.model.event_count() == 0
                     ? "device " + std::to_string(file.model.device()) + " has no trace entries"
                     : "the range selects no trace entries (--from " +
                           args.value("--from").value_or("start") + " --to " +
                           args.value("--to").value_or("end") + ")") +
                "; no file written");
        }
        if (*format == "perfetto") {
            // The categories need every frame, whichever frames the slices' names show.
            const analysis::category_map categories =
                analysis::category_map::build(model_with_every_frame(file));
            write_output(out_path, output_content::binary, [&](std::ostream& out) {
                write_perfetto(file.model, categories, range, out);
            });
        } else {
            write_output(out_path, output_content::text,
                         [&](std::ostream& out) { write_csv(file.model, range, out); });
        }
    }
    if (out_path != standard_stream_path) {
        std::cerr << "memtrail export: wrote " << out_path << "\n";
    }
    return exit_ok;
}

}  // namespace memtrail::cli
