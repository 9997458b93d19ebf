// memtrail export FILE --format F -o OUT : the snapshot in other tools' formats.

#include <fstream>
#include <iostream>

#include "commands.hpp"
#include "common.hpp"
#include "json_writer.hpp"
#include "memtrail/analysis/flame.hpp"
#include "memtrail/analysis/frame_text.hpp"
#include "memtrail/analysis/size_text.hpp"
#include "memtrail/snapshot/torch_pickle.hpp"
#include "report_json.hpp"

namespace memtrail::cli {
namespace {

using snapshot::action;

std::ofstream open_output(const std::string& path) {
    std::ofstream out(path, std::ios::binary);
    if (!out) {
        throw snapshot::load_error(path + ": cannot open for writing");
    }
    return out;
}

double micros(int64_t time_ns) {
    return static_cast<double>(time_ns) / 1000.0;
}

// Chrome trace-event JSON (Perfetto and chrome://tracing read it): counters for allocated,
// active and reserved bytes, one async slice per allocation, annotations as slices and markers,
// OOMs as instants.
void write_perfetto(const analysis::device_model& model, std::ostream& out) {
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
    for (size_t p = 0; p < allocated.size(); ++p) {
        if (p > 0 && allocated[p] == allocated[p - 1] && active[p] == active[p - 1] &&
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
    for (const auto& a : source.annotations) {
        if (a.device == pid) {
            annotation(a.is_start ? "B" : "E", source.string_at(a.name), a.time_ns);
        }
    }
    for (size_t i = 0; i < model.event_count(); ++i) {
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

void write_csv(const analysis::device_model& model, std::ostream& out) {
    const snapshot::snapshot& source = model.source();
    out << "index,time_ns,action,address,size,requested_size,stream,allocated,active,reserved,"
           "frame\n";
    const auto& allocated = model.values(analysis::series::allocated);
    const auto& active = model.values(analysis::series::active);
    const auto& reserved = model.values(analysis::series::reserved);
    for (size_t i = 0; i < model.event_count(); ++i) {
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
            "[--pending] [--device N] [--all-frames]",
            "Writes the snapshot for other tools: a PyTorch snapshot pickle (for "
            "torch.cuda._memory_viz and pytorch.org/memory_viz), folded stacks of the live bytes "
            "at one moment (flamegraph.pl, speedscope), a Chrome/Perfetto trace (ui.perfetto.dev) "
            "or a CSV of the trace entries.",
            "folded: one line per stack, 'outer;...;inner BYTES', the live bytes at --at.\n"
            "perfetto: counters for allocated, active and reserved bytes, one slice per "
            "allocation, annotations and OOMs.\n"
            "csv: one row per trace entry: index, time_ns, action, address, size, "
            "requested_size, stream, allocated, active, reserved, frame; the memory columns hold "
            "the state after the entry.\n",
            1,
            1,
            {at_option(),
             device_option(),
             all_frames_option(),
             {"--format", "", "FORMAT", "torch-pickle, folded, perfetto or csv", false},
             {"--output", "-o", "OUT", "the file to write", false},
             {"--pending", "", "", "folded: count blocks waiting for other streams too", false}},
            false};
}

int run_export(const parsed_arguments& args) {
    const auto format = args.value("--format");
    const auto output = args.value("--output");
    if (!format) {
        throw usage_error(
            "memtrail export: --format is required (torch-pickle, folded, "
            "perfetto or csv)");
    }
    if (!output) {
        throw usage_error("memtrail export: -o OUT is required");
    }
    if (*format != "torch-pickle" && *format != "folded" && *format != "perfetto" &&
        *format != "csv") {
        throw usage_error("memtrail export: unknown format '" + *format +
                          "' (torch-pickle, folded, perfetto or csv)");
    }
    // A PyTorch pickle is a conversion: it keeps every frame.
    const opened_file file = open_file(
        args.positional[0], args,
        *format == "torch-pickle" ? analysis::frame_visibility::all_frames : frames_shown(args));
    if (*format == "torch-pickle") {
        try {
            snapshot::write_torch_pickle(file.model.source(), *output);
        } catch (const std::system_error& e) {
            throw snapshot::load_error(*output + ": " + e.what());
        }
    } else if (*format == "folded") {
        const moment at = resolve_at(file.model, args.value("--at"));
        const auto measure = args.has("--pending") ? analysis::live_measure::active
                                                   : analysis::live_measure::allocated;
        open_output(*output) << analysis::to_folded(
            analysis::flame_at(file.model, at.position, measure));
    } else if (*format == "perfetto") {
        std::ofstream out = open_output(*output);
        write_perfetto(file.model, out);
    } else {
        std::ofstream out = open_output(*output);
        write_csv(file.model, out);
    }
    std::cerr << "memtrail export: wrote " << *output << "\n";
    return exit_ok;
}

}  // namespace memtrail::cli
