// memtrail replay TRACE : runs a recorded trace through memtrail's allocator and checks parity.
// memtrail whatif FILE --alloc-conf CONF... : the same trace under other settings and two
// baseline policies, side by side.

#include <fstream>
#include <iostream>
#include <memory>
#include <optional>

#include "commands.hpp"
#include "common.hpp"
#include "memtrail/analysis/baselines.hpp"
#include "memtrail/analysis/oom_report.hpp"
#include "memtrail/analysis/size_text.hpp"
#include "memtrail/core/allocator_config.hpp"
#include "memtrail/replay/replay.hpp"
#include "memtrail/replay/trace_metadata.hpp"
#include "memtrail/snapshot/msgpack_format.hpp"
#include "memtrail/snapshot/torch_pickle.hpp"
#include "progress.hpp"
#include "report_json.hpp"
#include "text_table.hpp"

namespace memtrail::cli {
namespace {

using analysis::format_bytes;

constexpr uint64_t replay_default_memory = 80ull << 30;  // what replay uses with no total known

allocator_config parse_conf(const std::string& text) {
    try {
        return allocator_config::parse(text);
    } catch (const config_error& e) {
        throw usage_error("--alloc-conf '" + text + "': " + e.what());
    }
}

replay::replay_result run_replay(const snapshot::snapshot& input,
                                 const replay::replay_options& options, const std::string& path) {
    try {
        return replay::replay_trace(input, options);
    } catch (const std::exception& e) {
        throw snapshot::load_error(path + ": cannot replay: " + e.what());
    }
}

// The device capacity a replay of `source` on `device` runs with.
uint64_t capacity_of(const snapshot::snapshot& source, int device, uint64_t device_memory,
                     double fraction) {
    uint64_t total = device_memory;
    for (const auto& d : source.info.devices) {
        if (total == 0 && d.device == device) {
            total = d.total_memory;
        }
    }
    total = total == 0 ? replay_default_memory : total;
    return fraction > 0.0 ? static_cast<uint64_t>(static_cast<double>(total) * fraction) : total;
}

// One row of the what-if table.
struct outcome_row {
    std::string name;
    uint64_t peak_reserved = 0;
    uint64_t peak_allocated = 0;
    uint64_t device_allocations = 0;
    double fragmentation = 0.0;  // at peak allocated
    uint64_t ooms = 0;
    std::optional<size_t> first_oom;
};

// Fragmentation when the allocated curve peaks.
double fragmentation_at_peak(const analysis::device_model& model) {
    return analysis::totals_of(model.state_after(model.peak_position(analysis::series::allocated)))
        .fragmentation();
}

outcome_row recorded_row(const analysis::device_model& model) {
    outcome_row row;
    row.name = "as recorded";
    row.peak_reserved = peak_bytes(model, analysis::series::reserved);
    row.peak_allocated = peak_bytes(model, analysis::series::allocated);
    for (size_t i = 0; i < model.event_count(); ++i) {
        const auto kind = model.entry(i).kind;
        row.device_allocations +=
            (kind == snapshot::action::segment_alloc || kind == snapshot::action::segment_map) ? 1
                                                                                               : 0;
    }
    row.fragmentation = fragmentation_at_peak(model);
    const auto ooms = analysis::oom_entries(model);
    row.ooms = ooms.size();
    if (!ooms.empty()) {
        row.first_oom = ooms.front();
    }
    return row;
}

outcome_row replayed_row(const std::string& name, const replay::replay_result& result, int device) {
    outcome_row row;
    row.name = name;
    row.peak_reserved = result.peak_reserved;
    row.peak_allocated = result.peak_allocated;
    row.device_allocations = result.device_allocations;
    row.ooms = result.ooms;
    row.first_oom = result.first_oom_entry;
    auto replayed = std::make_shared<snapshot::snapshot>(result.final_state);
    row.fragmentation = fragmentation_at_peak(analysis::device_model::build(replayed, device));
    return row;
}

outcome_row baseline_row(const analysis::policy_outcome& outcome) {
    return {outcome.name,           outcome.peak_reserved,
            outcome.peak_allocated, outcome.device_allocations,
            outcome.fragmentation,  outcome.failed_allocations,
            outcome.first_failure};
}

void write_stats_json(const std::map<std::string, int64_t>& stats, const std::string& path) {
    std::ofstream out(path);
    if (!out) {
        throw snapshot::load_error(path + ": cannot open for writing");
    }
    json_writer json(out);
    json.begin_object();
    for (const auto& [name, value] : stats) {
        json.field(name, value);
    }
    json.end_object();
}

}  // namespace

command_spec replay_spec() {
    return {"replay",
            "TRACE [--alloc-conf CONF] [--device-memory BYTES] [--memory-fraction F] [-o OUT] "
            "[--torch-pickle OUT.pickle] [--stats-json OUT.json] [--expect-stats JSON] "
            "[--device N] [--json]",
            "Runs a recorded trace (memtrail snapshot or PyTorch pickle) through memtrail's "
            "allocator on a simulated device and compares the result with the original, entry "
            "by entry, segment by segment and, with --expect-stats, counter by counter.",
            "Without --alloc-conf the trace is replayed under the configuration it was recorded "
            "with (the snapshot's allocator settings, or the 'conf' of --expect-stats). The "
            "comparison is made when replaying under that configuration; a difference exits "
            "with 1. --expect-stats takes the JSON written beside a parity trace "
            "(shared/anchors/pytorch/*.json) or a plain {\"name\": number} object.\n",
            1,
            1,
            {device_option(),
             {"--alloc-conf", "", "CONF", "PYTORCH_CUDA_ALLOC_CONF syntax", false},
             {"--device-memory", "", "BYTES",
              "simulated capacity (default: the recorded total, "
              "else 80GiB)",
              false},
             {"--memory-fraction", "", "F", "per-process fraction of the capacity", false},
             {"--output", "-o", "OUT",
              "write the replay as a memtrail snapshot ('-': standard output, the report then "
              "goes to standard error)",
              false},
             {"--torch-pickle", "", "OUT.pickle", "write the replay as a PyTorch pickle", false},
             {"--stats-json", "", "OUT.json", "write memory_stats() of the replay", false},
             {"--expect-stats", "", "JSON", "compare the counters with these", false}}};
}

int run_replay_command(const parsed_arguments& args) {
    const std::string path = input_name(args.positional[0]);
    const snapshot::loaded_snapshot loaded = load_input(args.positional[0]);
    const snapshot::snapshot& input = *loaded.snapshot;

    std::optional<replay::trace_metadata> expected;
    if (const auto file = args.value("--expect-stats")) {
        try {
            expected = replay::read_trace_metadata(*file);
        } catch (const std::runtime_error& e) {
            throw snapshot::load_error(e.what());
        }
    }
    replay::replay_options options;
    options.device = chosen_device(input, args.positional[0], args);
    const std::string recorded_conf = expected ? expected->conf : input.settings.conf;
    const std::string conf = args.value("--alloc-conf").value_or(recorded_conf);
    options.config = parse_conf(conf);
    if (const auto m = args.value("--device-memory")) {
        options.device_memory = parse_size_option("--device-memory", *m);
    } else if (expected && expected->device_total != 0) {
        options.device_memory = expected->device_total;
    }
    if (const auto f = args.value("--memory-fraction")) {
        options.memory_fraction = parse_fraction_option("--memory-fraction", *f);
    } else if (expected) {
        options.memory_fraction = expected->fraction;
    }

    // Recorded addresses only make sense under the recorded settings.
    const bool compared = conf == recorded_conf;
    options.reuse_trace_addresses = compared;
    if (compared && expected) {
        options.expected_stats = &expected->stats;  // settles what the trace leaves ambiguous
    }
    const replay::replay_result result = [&] {
        const progress_line progress("replaying " + path + " under '" + conf + "'");
        return run_replay(input, options, path);
    }();
    replay::parity_report parity;
    if (compared) {
        parity = replay::compare_with_original(input, result, expected ? &expected->stats : nullptr,
                                               options.device);
    }
    // With -o -, the snapshot is standard output and the report goes to standard error.
    const bool snapshot_on_stdout = args.value("--output") == standard_stream_path;
    std::ostream& report = snapshot_on_stdout ? std::cerr : std::cout;
    try {
        if (snapshot_on_stdout) {
            const std::vector<uint8_t> bytes = snapshot::write_snapshot(result.final_state);
            write_output(standard_stream_path, output_content::binary, [&](std::ostream& out) {
                out.write(reinterpret_cast<const char*>(bytes.data()),
                          static_cast<std::streamsize>(bytes.size()));
            });
        } else if (const auto out = args.value("--output")) {
            const progress_line progress("writing " + *out);
            snapshot::write_snapshot(result.final_state, std::filesystem::path(*out));
        }
        if (const auto out = args.value("--torch-pickle")) {
            snapshot::write_torch_pickle(result.final_state, std::filesystem::path(*out));
        }
    } catch (const std::system_error& e) {
        throw snapshot::load_error(e.what());
    }
    if (const auto out = args.value("--stats-json")) {
        write_stats_json(result.stats, *out);
    }

    if (args.json) {
        json_writer json(report);
        json.begin_object()
            .field("path", path)
            .field("alloc_conf", conf)
            .field("allocations", result.allocations)
            .field("ooms", result.ooms)
            .field("peak_reserved", result.peak_reserved)
            .field("peak_allocated", result.peak_allocated)
            .field("device_allocations", result.device_allocations)
            .field("unmatched_frees", result.unmatched_frees)
            .field("compared", compared);
        if (compared) {
            json.key("parity")
                .begin_object()
                .field("ok", parity.ok())
                .field("trace_equal", parity.trace_equal)
                .field("segments_equal", parity.segments_equal)
                .field("stats_equal", parity.stats_equal)
                .field("first_difference", parity.first_difference)
                .end_object();
        }
        json.end_object();
    } else {
        report << path << ": replayed " << result.allocations << " allocations under '" << conf
               << "'\n\n";
        text_table table({"<", ""});
        table.add_row({"peak reserved", format_bytes(result.peak_reserved)});
        table.add_row({"peak allocated", format_bytes(result.peak_allocated)});
        table.add_row({"device allocations", std::to_string(result.device_allocations)});
        table.add_row(
            {"OOMs", std::to_string(result.ooms) +
                         (result.first_oom_entry
                              ? " (first at entry " + std::to_string(*result.first_oom_entry) + ")"
                              : "")});
        table.add_row({"unmatched frees", std::to_string(result.unmatched_frees)});
        table.print(report, "  ");
        if (!compared) {
            report << "\nnot compared with the original: it was recorded under '" << recorded_conf
                   << "'\n";
        } else {
            report << "\nparity with the original: " << (parity.ok() ? "identical" : "DIFFERS")
                   << "\n  trace:    " << (parity.trace_equal ? "equal" : "different")
                   << "\n  segments: " << (parity.segments_equal ? "equal" : "different")
                   << "\n  counters: "
                   << (expected ? (parity.stats_equal ? "equal" : "different")
                                : "not compared (no --expect-stats)")
                   << "\n";
            if (!parity.first_difference.empty()) {
                report << "  first difference: " << parity.first_difference << "\n";
            }
        }
    }
    return compared && !parity.ok() ? exit_check_failed : exit_ok;
}

command_spec whatif_spec() {
    return {"whatif",
            "FILE --alloc-conf CONF [--alloc-conf CONF2 ...] [--device-memory BYTES] "
            "[--memory-fraction F] [--device N] [--json]",
            "Replays the trace under other allocator settings and compares peak reserved "
            "memory, device allocations, fragmentation and whether the OOM would still happen, "
            "beside the recording itself and two baselines: a cudaMalloc per allocation and a "
            "power-of-two buddy allocator.",
            "Fragmentation is 1 - largest free block / free bytes held, when allocated memory "
            "peaks. The baselines see the same requests in the same order and free a block when "
            "its free completes; their capacity is the replay's.\n",
            1,
            1,
            {device_option(),
             {"--alloc-conf", "", "CONF", "settings to try, PYTORCH_CUDA_ALLOC_CONF syntax", true},
             {"--device-memory", "", "BYTES",
              "simulated capacity (default: the recorded total, "
              "else 80GiB)",
              false},
             {"--memory-fraction", "", "F", "per-process fraction of the capacity", false}}};
}

int run_whatif(const parsed_arguments& args) {
    const auto& confs = args.values("--alloc-conf");
    if (confs.empty()) {
        throw usage_error("give at least one --alloc-conf");
    }
    std::vector<allocator_config> configs;
    for (const auto& conf : confs) {
        configs.push_back(parse_conf(conf));
    }
    const opened_file file = open_file(args.positional[0], args);
    const snapshot::snapshot& input = file.model.source();
    replay::replay_options options;
    options.device = file.model.device();
    options.reuse_trace_addresses = false;
    if (const auto m = args.value("--device-memory")) {
        options.device_memory = parse_size_option("--device-memory", *m);
    }
    if (const auto f = args.value("--memory-fraction")) {
        options.memory_fraction = parse_fraction_option("--memory-fraction", *f);
    }
    const uint64_t capacity =
        capacity_of(input, options.device, options.device_memory, options.memory_fraction);

    std::vector<outcome_row> rows = {recorded_row(file.model)};
    for (size_t i = 0; i < confs.size(); ++i) {
        options.config = configs[i];
        const progress_line progress("replaying under '" + confs[i] + "' (" +
                                     std::to_string(i + 1) + " of " + std::to_string(confs.size()) +
                                     ")");
        rows.push_back(replayed_row("'" + confs[i] + "'", run_replay(input, options, file.path),
                                    options.device));
    }
    {
        const progress_line progress("simulating the cudaMalloc and buddy baselines");
        rows.push_back(baseline_row(analysis::simulate_cuda_malloc(file.model, capacity)));
        rows.push_back(baseline_row(analysis::simulate_buddy(file.model, capacity)));
    }

    if (args.json) {
        json_writer json(std::cout);
        json.begin_object()
            .field("path", file.path)
            .field("device", file.model.device())
            .field("capacity", capacity)
            .key("outcomes")
            .begin_array();
        for (const auto& row : rows) {
            json.begin_object()
                .field("name", row.name)
                .field("peak_reserved", row.peak_reserved)
                .field("peak_allocated", row.peak_allocated)
                .field("device_allocations", row.device_allocations)
                .field("fragmentation", row.fragmentation)
                .field("ooms", row.ooms);
            json.key("first_oom_entry");
            if (row.first_oom) {
                json.value(static_cast<uint64_t>(*row.first_oom));
            } else {
                json.null();
            }
            json.end_object();
        }
        json.end_array().end_object();
        return exit_ok;
    }
    std::cout << file.path << ", device " << file.model.device() << ", capacity "
              << format_bytes(capacity) << "\n\n";
    text_table table(
        {"<policy", "peak reserved", "peak allocated", "device allocs", "fragmentation", "<OOM"});
    for (const auto& row : rows) {
        table.add_row({row.name, format_bytes(row.peak_reserved), format_bytes(row.peak_allocated),
                       std::to_string(row.device_allocations), percent(row.fragmentation),
                       row.ooms == 0
                           ? "no"
                           : std::to_string(row.ooms) + " (first at entry " +
                                 (row.first_oom ? std::to_string(*row.first_oom) : "?") + ")"});
    }
    table.print(std::cout);
    return exit_ok;
}

}  // namespace memtrail::cli
