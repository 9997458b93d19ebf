// memtrail export FILE --format F -o OUT : the snapshot in other tools' formats, whole or a range
// of its trace.

#include <iostream>

#include "commands.hpp"
#include "common.hpp"
#include "json_writer.hpp"
#include "memtrail/analysis/flame.hpp"
#include "memtrail/analysis/frame_text.hpp"
#include "memtrail/analysis/size_text.hpp"
#include "memtrail/snapshot/torch_pickle.hpp"
#include "progress.hpp"
#include "report_json.hpp"

namespace memtrail::cli {
namespace {

using snapshot::action;

// The trace entries an export covers, [first, end) by index: positions first (the state before
// the range) to end (the state after its last entry).
struct entry_range {
    size_t first = 0;
    size_t end = 0;
    bool whole = true;  // no --from/--to: everything, annotations from before the trace too
    bool empty() const { return first >= end; }
};

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

double micros(int64_t time_ns) {
    return static_cast<double>(time_ns) / 1000.0;
}

// Chrome trace-event JSON (Perfetto and chrome://tracing read it): counters for allocated,
// active and reserved bytes, one async slice per allocation, annotations as slices and markers,
// OOMs as instants.
void write_perfetto(const analysis::device_model& model, const entry_range& range,
                    std::ostream& out) {
    const snapshot::snapshot& source = model.source();
    const int pid = model.device();
    json_writer json(out);
    json.begin_object().field("displayTimeUnit", "ns").key("traceEvents").begin_array();
    auto metadata = [&](const char* name, int tid, const std::string& value) {
        json.begin_object()
            .field("ph", "M")
            .field("name", name)
            .field("pid", pid)
            .field("tid", tid)
            .key("args")
            .begin_object()
            .field("name", value)
            .end_object()
            .end_object();
    };
    metadata("process_name", 0, "memtrail device " + std::to_string(pid));
    metadata("thread_name", 1, "annotations");

    const auto& allocated = model.values(analysis::series::allocated);
    const auto& active = model.values(analysis::series::active);
    const auto& reserved = model.values(analysis::series::reserved);
    for (size_t p = range.first; p <= range.end; ++p) {
        if (p > range.first && allocated[p] == allocated[p - 1] && active[p] == active[p - 1] &&
            reserved[p] == reserved[p - 1]) {
            continue;
        }
        json.begin_object()
            .field("ph", "C")
            .field("name", "memory")
            .field("pid", pid)
            .field("tid", 0)
            .field("ts", micros(model.time_at(p)))
            .key("args")
            .begin_object()
            .field("allocated", allocated[p])
            .field("active", active[p])
            .field("reserved", reserved[p])
            .end_object()
            .end_object();
    }

    const auto& lifetimes = model.lifetimes();
    for (size_t i = 0; i < lifetimes.size(); ++i) {
        const auto& life = lifetimes[i];
        if (life.begin > range.end || life.end <= range.first) {
            continue;  // not alive during the range
        }
        const std::string name =
            analysis::format_bytes(life.size) + " " + innermost_frame(source, life.stack);
        json.begin_object()
            .field("ph", "b")
            .field("cat", "allocation")
            .field("name", name)
            .field("id", static_cast<uint64_t>(i))
            .field("pid", pid)
            .field("tid", 0)
            .field("ts", micros(model.time_at(life.begin)))
            .key("args")
            .begin_object()
            .field("address", hex_address(life.address))
            .field("size", life.size)
            .field("requested_size", life.requested_size)
            .field("from_before_trace", life.from_before_trace);
        json.key("stack");
        write_stack(json, source, life.stack);
        json.end_object().end_object();
        json.begin_object()
            .field("ph", "e")
            .field("cat", "allocation")
            .field("name", name)
            .field("id", static_cast<uint64_t>(i))
            .field("pid", pid)
            .field("tid", 0)
            .field("ts", micros(model.time_at(life.end)))
            .end_object();
    }

    auto annotation = [&](const char* phase, std::string_view name, int64_t time_ns) {
        json.begin_object()
            .field("ph", phase)
            .field("name", name)
            .field("pid", pid)
            .field("tid", 1)
            .field("ts", micros(time_ns));
        if (std::string_view(phase) == "i") {
            json.field("s", "t");
        }
        json.end_object();
    };
    const int64_t range_start_ns = model.time_at(range.first);
    const int64_t range_end_ns = model.time_at(range.end);
    for (const auto& a : source.annotations) {
        if (a.device == pid &&
            (range.whole || (a.time_ns >= range_start_ns && a.time_ns <= range_end_ns))) {
            annotation(a.is_start ? "B" : "E", source.string_at(a.name), a.time_ns);
        }
    }
    for (size_t i = range.first; i < range.end; ++i) {
        const snapshot::trace_entry& e = model.entry(i);
        switch (e.kind) {
            case action::annotation_start:
                annotation("B", source.string_at(e.name), e.time_ns);
                break;
            case action::annotation_end:
                annotation("E", source.string_at(e.name), e.time_ns);
                break;
            case action::annotation_marker:
                annotation("i", source.string_at(e.name), e.time_ns);
                break;
            case action::oom:
                json.begin_object()
                    .field("ph", "i")
                    .field("s", "p")
                    .field("name", "OOM " + analysis::format_bytes(e.size))
                    .field("pid", pid)
                    .field("tid", 0)
                    .field("ts", micros(e.time_ns))
                    .end_object();
                break;
            default:
                break;
        }
    }
    json.end_array().end_object();
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
    return {"export",
            "FILE --format torch-pickle|folded|perfetto|csv -o OUT [--at EVENT|peak|end] "
            "[--from EVENT] [--to EVENT] [--pending] [--device N] [--all-frames]",
            "Writes the snapshot for other tools: a PyTorch snapshot pickle (for "
            "torch.cuda._memory_viz and pytorch.org/memory_viz), folded stacks of the live bytes "
            "at one moment (flamegraph.pl, speedscope), a Chrome/Perfetto trace (ui.perfetto.dev) "
            "or a CSV of the trace entries.",
            "folded: one line per stack, 'outer;...;inner BYTES', the live bytes at --at.\n"
            "perfetto: counters for allocated, active and reserved bytes, one slice per "
            "allocation, annotations and OOMs; with --from/--to the entries of the range and the "
            "allocations alive during it.\n"
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
             {"--from", "", "EVENT",
              "perfetto, csv: the first trace entry to export (default: start)", false},
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
        write_output(out_path, output_content::text, [&](std::ostream& out) {
            if (*format == "perfetto") {
                write_perfetto(file.model, range, out);
            } else {
                write_csv(file.model, range, out);
            }
        });
    }
    if (out_path != standard_stream_path) {
        std::cerr << "memtrail export: wrote " << out_path << "\n";
    }
    return exit_ok;
}

}  // namespace memtrail::cli
