// memtrail replay TRACE : runs a recorded trace through memtrail's allocator and checks parity.
// memtrail whatif FILE --alloc-conf CONF... : the same trace under other settings and two
// baseline policies, side by side.
//
// Index of this file:
// [SECTION] settings and the assumed device
// [SECTION] the what-if rows
// [SECTION] writing the stats and the what-if table
// [SECTION] the replay report
// [SECTION] memtrail replay
// [SECTION] memtrail whatif

#include <fstream>
#include <iostream>
#include <memory>
#include <optional>

#include "detail/commands.hpp"
#include "detail/common.hpp"
#include "detail/progress.hpp"
#include "detail/report_json.hpp"
#include "detail/text_table.hpp"
#include "memtrail/analysis/baselines.hpp"
#include "memtrail/analysis/oom_report.hpp"
#include "memtrail/analysis/size_text.hpp"
#include "memtrail/core/allocator_config.hpp"
#include "memtrail/replay/replay.hpp"
#include "memtrail/replay/trace_metadata.hpp"
#include "memtrail/snapshot/msgpack_format.hpp"
#include "memtrail/snapshot/torch_pickle.hpp"

namespace memtrail::cli {
namespace {

using analysis::format_bytes;

//-------------------------------------------------------------------------------------------------
// [SECTION] settings and the assumed device
//-------------------------------------------------------------------------------------------------

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

// The device size a what-if assumed, where it came from, and the capacity the replays had.
struct assumed_device {
    replay::device_total total;
    double fraction = 0.0;  // --memory-fraction, 0 for none
    uint64_t capacity = 0;
};

assumed_device assume_device(const snapshot::snapshot& source,
                             const replay::replay_options& options) {
    assumed_device d;
    d.total = replay::device_total_of(source, options);
    d.fraction = options.memory_fraction;
    d.capacity = d.fraction > 0.0
                     ? static_cast<uint64_t>(static_cast<double>(d.total.bytes) * d.fraction)
                     : d.total.bytes;
    return d;
}

const char* source_key(replay::device_total_source source) {
    switch (source) {
        case replay::device_total_source::option:
            return "device-memory";
        case replay::device_total_source::recorded:
            return "recorded";
        case replay::device_total_source::assumed:
            return "default";
    }
    return "default";
}

std::string source_text(replay::device_total_source source) {
    switch (source) {
        case replay::device_total_source::option:
            return "given by --device-memory";
        case replay::device_total_source::recorded:
            return "the total recorded in the snapshot";
        case replay::device_total_source::assumed:
            return "assumed, not recorded in the snapshot: give --device-memory";
    }
    return "";
}

//-------------------------------------------------------------------------------------------------
// [SECTION] the what-if rows
//-------------------------------------------------------------------------------------------------

// One row of the what-if table.
struct outcome_row {
    std::string name;
    uint64_t peak_reserved = 0;
    uint64_t peak_allocated = 0;
    uint64_t device_allocations = 0;
    double fragmentation = 0.0;  // at peak allocated
    uint64_t ooms = 0;
    std::optional<size_t> first_oom;
    // The allocator's num_alloc_retries and num_ooms: none for the baselines, and for the
    // recording only where its snapshot carries memory_stats().
    std::optional<int64_t> alloc_retries;
    std::optional<int64_t> allocator_ooms;
};

std::optional<int64_t> counter(const std::map<std::string, int64_t>& stats, const char* name) {
    auto it = stats.find(name);
    return it == stats.end() ? std::nullopt : std::optional<int64_t>(it->second);
}

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
    if (auto stats = model.source().stats.find(model.device());
        stats != model.source().stats.end()) {
        row.alloc_retries = counter(stats->second, "num_alloc_retries");
        row.allocator_ooms = counter(stats->second, "num_ooms");
    }
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
    row.alloc_retries = counter(result.stats, "num_alloc_retries");
    row.allocator_ooms = counter(result.stats, "num_ooms");
    auto replayed = std::make_shared<snapshot::snapshot>(result.final_state);
    row.fragmentation = fragmentation_at_peak(analysis::device_model::build(replayed, device));
    return row;
}

outcome_row baseline_row(const analysis::policy_outcome& outcome) {
    outcome_row row;
    row.name = outcome.name;
    row.peak_reserved = outcome.peak_reserved;
    row.peak_allocated = outcome.peak_allocated;
    row.device_allocations = outcome.device_allocations;
    row.fragmentation = outcome.fragmentation;
    row.ooms = outcome.failed_allocations;
    row.first_oom = outcome.first_failure;
    return row;
}

//-------------------------------------------------------------------------------------------------
// [SECTION] writing the stats and the what-if table
//-------------------------------------------------------------------------------------------------

void write_stats_json(const std::map<std::string, int64_t>& stats, const std::string& path) {
    write_output(path, output_content::text, [&](std::ostream& out) {
        json_writer json(out);
        json.begin_object();
        for (const auto& [name, value] : stats) {
            json.field(name, value);
        }
        json.end_object();
    });
}

void optional_field(json_writer& json, const char* key, const std::optional<int64_t>& value) {
    json.key(key);
    if (value) {
        json.value(*value);
    } else {
        json.null();
    }
}

void print_whatif_json(const opened_file& file, const assumed_device& device,
                       const std::vector<outcome_row>& rows) {
    json_writer json(std::cout);
    json.begin_object()
        .field("path", file.path)
        .field("device", file.model.device())
        .field("device_total", device.total.bytes)
        .field("device_total_source", source_key(device.total.source))
        .field("memory_fraction", device.fraction)
        .field("capacity", device.capacity)
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
        optional_field(json, "num_alloc_retries", row.alloc_retries);
        optional_field(json, "num_ooms", row.allocator_ooms);
        json.end_object();
    }
    json.end_array().end_object();
}

void print_whatif_text(const opened_file& file, const assumed_device& device,
                       const std::vector<outcome_row>& rows) {
    std::cout << file.path << ", device " << file.model.device() << "\n"
              << "device size " << format_bytes(device.total.bytes) << " ("
              << source_text(device.total.source) << "), capacity "
              << format_bytes(device.capacity);
    if (device.fraction > 0.0) {
        std::cout << " (--memory-fraction " << device.fraction << " of the device size)";
    }
    std::cout << "\n";
    if (device.total.source == replay::device_total_source::assumed &&
        rows.front().peak_reserved > device.capacity) {
        std::cout << "The recording itself reserved " << format_bytes(rows.front().peak_reserved)
                  << ", more than this capacity: give the device's total with --device-memory.\n";
    }
    std::cout << "\n";
    text_table table({"<policy", "peak reserved", "peak allocated", "device allocs",
                      "fragmentation", "retries", "<OOM"});
    bool retried = false;
    for (const auto& row : rows) {
        retried = retried || row.alloc_retries.value_or(0) > 0;
        table.add_row({row.name, format_bytes(row.peak_reserved), format_bytes(row.peak_allocated),
                       std::to_string(row.device_allocations), percent(row.fragmentation),
                       row.alloc_retries ? std::to_string(*row.alloc_retries) : "-",
                       row.ooms == 0
                           ? "no"
                           : std::to_string(row.ooms) + " (first at entry " +
                                 (row.first_oom ? std::to_string(*row.first_oom) : "?") + ")"});
    }
    table.print(std::cout);
    std::cout
        << "\nretries: num_alloc_retries of memory_stats(). An allocation that finds no cached "
           "block and no room\nfor a new segment makes the allocator synchronize the "
           "device (every stream), give back all\nits unsplit cached blocks and ask again: "
           "each retry stalls the job, and the cache it emptied\nmust be allocated again. "
           "'-': not known (a baseline, or a recording without memory_stats()).\n";
    if (retried) {
        std::cout << "A setting with retries reached its capacity, even where no OOM follows.\n";
    }
}

//-------------------------------------------------------------------------------------------------
// [SECTION] the replay report
//-------------------------------------------------------------------------------------------------

// What `memtrail replay` reports.
struct replay_report {
    std::string path;
    int device = 0;
    std::string conf, recorded_conf;
    const replay::replay_result& result;
    bool compared = false;
    replay::parity_report parity;
    bool counters_expected = false;
    assumed_device device_size;
    bool total_from_expected = false;
};

std::string device_size_key(const replay_report& r) {
    return r.total_from_expected ? "expect-stats" : source_key(r.device_size.total.source);
}

std::string device_size_text(const replay_report& r) {
    std::string text = format_bytes(r.device_size.total.bytes) + " (" +
                       (r.total_from_expected ? std::string("the device_total of --expect-stats")
                                              : source_text(r.device_size.total.source)) +
                       ")";
    if (r.device_size.fraction > 0.0) {
        text += ", capacity " + format_bytes(r.device_size.capacity);
    }
    return text;
}

void print_replay_json(std::ostream& out, const replay_report& r) {
    json_writer json(out);
    json.begin_object()
        .field("path", r.path)
        .field("device", r.device)
        .field("device_total", r.device_size.total.bytes)
        .field("device_total_source", device_size_key(r))
        .field("memory_fraction", r.device_size.fraction)
        .field("capacity", r.device_size.capacity)
        .field("alloc_conf", r.conf)
        .field("allocations", r.result.allocations)
        .field("ooms", r.result.ooms);
    optional_field(json, "num_alloc_retries", counter(r.result.stats, "num_alloc_retries"));
    json.field("peak_reserved", r.result.peak_reserved)
        .field("peak_allocated", r.result.peak_allocated)
        .field("device_allocations", r.result.device_allocations)
        .field("unmatched_frees", r.result.unmatched_frees)
        .field("compared", r.compared);
    if (r.compared) {
        json.key("parity")
            .begin_object()
            .field("ok", r.parity.ok())
            .field("trace_equal", r.parity.trace_equal)
            .field("segments_equal", r.parity.segments_equal)
            .field("stats_equal", r.parity.stats_equal)
            .field("first_difference", r.parity.first_difference)
            .end_object();
    }
    json.end_object();
}

void print_replay_text(std::ostream& out, const replay_report& r) {
    out << r.path << ", device " << r.device << ": replayed " << r.result.allocations
        << " allocations under '" << r.conf << "'\n"
        << "device size " << device_size_text(r) << "\n\n";
    text_table table({"<", ""});
    table.add_row({"peak reserved", format_bytes(r.result.peak_reserved)});
    table.add_row({"peak allocated", format_bytes(r.result.peak_allocated)});
    table.add_row({"device allocations", std::to_string(r.result.device_allocations)});
    table.add_row(
        {"retries", std::to_string(counter(r.result.stats, "num_alloc_retries").value_or(0))});
    table.add_row(
        {"OOMs", std::to_string(r.result.ooms) +
                     (r.result.first_oom_entry
                          ? " (first at entry " + std::to_string(*r.result.first_oom_entry) + ")"
                          : "")});
    table.add_row({"unmatched frees", std::to_string(r.result.unmatched_frees)});
    table.print(out, "  ");
    if (!r.compared) {
        out << "\nnot compared with the original: it was recorded under '" << r.recorded_conf
            << "'\n";
        return;
    }
    out << "\nparity with the original: " << (r.parity.ok() ? "identical" : "DIFFERS")
        << "\n  trace:    " << (r.parity.trace_equal ? "equal" : "different")
        << "\n  segments: " << (r.parity.segments_equal ? "equal" : "different") << "\n  counters: "
        << (r.counters_expected ? (r.parity.stats_equal ? "equal" : "different")
                                : "not compared (no --expect-stats)")
        << "\n";
    if (!r.parity.first_difference.empty()) {
        out << "  first difference: " << r.parity.first_difference << "\n";
    }
}

}  // namespace

//-------------------------------------------------------------------------------------------------
// [SECTION] memtrail replay
//-------------------------------------------------------------------------------------------------

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
              "the simulated device's total memory (default: the recorded total, "
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

    const replay_report outcome{.path = path,
                                .device = options.device,
                                .conf = conf,
                                .recorded_conf = recorded_conf,
                                .result = result,
                                .compared = compared,
                                .parity = parity,
                                .counters_expected = expected.has_value(),
                                .device_size = assume_device(input, options),
                                // --expect-stats gives the recording's device_total.
                                .total_from_expected = !args.value("--device-memory") && expected &&
                                                       expected->device_total != 0};
    if (args.json) {
        print_replay_json(report, outcome);
    } else {
        print_replay_text(report, outcome);
    }
    return compared && !parity.ok() ? exit_check_failed : exit_ok;
}

//-------------------------------------------------------------------------------------------------
// [SECTION] memtrail whatif
//-------------------------------------------------------------------------------------------------

command_spec whatif_spec() {
    return {"whatif",
            "FILE --alloc-conf CONF [--alloc-conf CONF2 ...] [--device-memory BYTES] "
            "[--memory-fraction F] [--device N] [--json]",
            "Replays the trace under other allocator settings and compares peak reserved "
            "memory, device allocations, fragmentation, allocation retries and whether the OOM "
            "would still happen, beside the recording itself and two baselines: a cudaMalloc "
            "per allocation and a power-of-two buddy allocator.",
            "Fragmentation is 1 - largest free block / free bytes held, when allocated memory "
            "peaks. Retries (num_alloc_retries in memory_stats()): each one synchronized the "
            "device and gave back every unsplit cached block before asking again. The report "
            "says which device size it assumed and where it came from (--device-memory, the "
            "total the snapshot records, else 80GiB). The baselines see the same requests in "
            "the same order and free a block when its free completes; their capacity is the "
            "replay's.\n",
            1,
            1,
            {device_option(),
             {"--alloc-conf", "", "CONF", "settings to try, PYTORCH_CUDA_ALLOC_CONF syntax", true},
             {"--device-memory", "", "BYTES",
              "the simulated device's total memory (default: the recorded total, "
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
    const assumed_device device = assume_device(input, options);

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
        rows.push_back(baseline_row(analysis::simulate_cuda_malloc(file.model, device.capacity)));
        rows.push_back(baseline_row(analysis::simulate_buddy(file.model, device.capacity)));
    }
    if (args.json) {
        print_whatif_json(file, device, rows);
    } else {
        print_whatif_text(file, device, rows);
    }
    return exit_ok;
}

}  // namespace memtrail::cli
