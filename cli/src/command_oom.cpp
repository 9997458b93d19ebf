// memtrail oom FILE : why each out-of-memory in the trace happened.
//
// Index of this file:
// [SECTION] the text report
// [SECTION] remedies
// [SECTION] the JSON report
// [SECTION] the command

#include <iostream>

#include "detail/commands.hpp"
#include "detail/common.hpp"
#include "detail/report_json.hpp"
#include "detail/text_table.hpp"
#include "memtrail/analysis/oom_remedy_text.hpp"
#include "memtrail/analysis/oom_report.hpp"
#include "memtrail/analysis/outside_accounting.hpp"
#include "memtrail/analysis/size_text.hpp"
#include "memtrail/analysis/stream_names.hpp"
#include "memtrail/replay/oom_remedies.hpp"

namespace memtrail::cli {
namespace {

using analysis::format_bytes;

//-------------------------------------------------------------------------------------------------
// [SECTION] the text report
//-------------------------------------------------------------------------------------------------

// Streams as `stream 0` (the default), `stream 1`...; with --raw-streams their handles too.
struct stream_labels {
    analysis::stream_names names;
    bool raw = false;
    std::string operator()(uint64_t handle) {
        return raw ? names.name_with_handle(handle) : names.name(handle);
    }
};

std::string device_total_row(const analysis::oom_report& r) {
    return r.total_source == analysis::device_total_source::at_least
               ? "at least " + format_bytes(r.assumed_device_total)
               : format_bytes(r.assumed_device_total);
}

std::string device_total_note(const analysis::oom_report& r) {
    switch (r.total_source) {
        case analysis::device_total_source::snapshot:
            return "as the snapshot records it";
        case analysis::device_total_source::option:
            return "as --device-memory gives it";
        case analysis::device_total_source::at_least:
            return "unknown: reserved + device free assumed (--device-memory settles it)";
    }
    return "";
}

void add_cap_row(text_table& table, const analysis::oom_report& r) {
    const analysis::oom_cap& cap = r.cap;
    if (cap.recorded) {
        table.add_row({"memory cap", format_bytes(cap.lower),
                       "a memory fraction of " + std::to_string(cap.fraction) +
                           (cap.binding ? ", reached" : "")});
    } else if (cap.binding) {
        table.add_row({"memory cap", format_bytes(cap.lower) + " to " + format_bytes(cap.upper),
                       "inferred from the trace (--memory-fraction settles it)"});
    }
}

std::string pool_label(const analysis::oom_private_pool& p) {
    if (!p.pool) {
        return "a private pool the snapshot does not name (an OOM left it cached)";
    }
    return "private pool " + analysis::pool_name(*p.pool) + ", " + p.owner +
           (p.inferred ? ", inferred in part from its stream" : "");
}

void print_private_pools(const analysis::oom_report& r, stream_labels& streams) {
    if (r.private_pools.empty()) {
        return;
    }
    std::cout << "\n  private pools (they serve only their owner; releasing one gives back its "
                 "wholly free segments):\n";
    for (const auto& p : r.private_pools) {
        std::cout << "    "
                  << wrap_text(pool_label(p) + ", " + streams(p.stream) + ": " +
                                   format_bytes(p.reserved) + " in " + std::to_string(p.segments) +
                                   " segments, " + format_bytes(p.allocated) + " in use, " +
                                   format_bytes(p.free) + " free, " + format_bytes(p.releasable) +
                                   " releasable",
                               86, "      ");
    }
}

std::string verdict_line(const analysis::oom_report& r) {
    std::string line(analysis::verdict_name(r.verdict));
    if (r.secondary) {
        line += " (secondary: " + std::string(analysis::verdict_name(*r.secondary)) + ")";
    }
    return line;
}

void print_report(const analysis::oom_report& r, const snapshot::snapshot& source, size_t depth,
                  stream_labels& streams) {
    std::cout << "OOM at entry " << r.entry << ": " << format_bytes(r.requested) << " ("
              << r.requested << " bytes) on " << streams(r.stream) << ", "
              << (r.is_large ? "large" : "small") << " pool\n";
    for (const auto& line : stack_lines(source, r.stack, depth)) {
        std::cout << "    " << line << "\n";
    }
    std::cout << "\n";
    text_table table({"<", "", "<"});
    table.add_row({"device free", format_bytes(r.device_free), "as the device reported it"});
    table.add_row({"device total", device_total_row(r), device_total_note(r)});
    add_cap_row(table, r);
    table.add_row({"reserved", format_bytes(r.totals.reserved),
                   std::to_string(r.totals.segments) + " segments"});
    if (r.accounting) {
        table.add_row(
            {"outside", format_bytes(r.outside),
             "held outside the allocator: " + analysis::outside_split_text(*r.accounting)});
    }
    table.add_row({"allocated", format_bytes(r.totals.allocated),
                   std::to_string(r.totals.allocated_blocks) + " blocks"});
    table.add_row(
        {"pending free", format_bytes(r.totals.pending_free),
         std::to_string(r.totals.pending_free_blocks) + " blocks waiting for other streams"});
    table.add_row({"free in segments", format_bytes(r.totals.free),
                   std::to_string(r.totals.free_blocks) + " blocks"});
    table.add_row({"fragmentation", percent(r.fragmentation), "1 - largest free / free"});
    table.print(std::cout, "  ");

    std::cout << "\n  largest free block per pool and stream:\n";
    text_table pools({"<pool", "stream", "largest free", "free", "blocks", "pending free"});
    for (const auto& p : r.free_by_pool) {
        pools.add_row({p.is_large ? "large" : "small", streams(p.stream),
                       format_bytes(p.largest_free), format_bytes(p.free),
                       std::to_string(p.free_blocks), format_bytes(p.pending_free)});
    }
    pools.print(std::cout, "    ");
    print_private_pools(r, streams);

    if (!r.blockers.empty()) {
        std::cout << "\n  blockers: live blocks whose release would have opened "
                  << format_bytes(r.requested) << " in a partly free segment\n";
        for (const auto& b : r.blockers) {
            std::cout << "    segment " << hex_address(b.segment_address) << ": release "
                      << format_bytes(b.live_bytes) << " in " << b.blocks.size()
                      << " blocks to free " << format_bytes(b.range_size) << " at "
                      << hex_address(b.range_address) << "\n";
            for (const auto& blk : b.blocks) {
                std::cout << "      " << format_bytes(blk.size) << " at "
                          << hex_address(blk.address)
                          << (blk.state == snapshot::block_state::active_pending_free
                                  ? " (pending free)"
                                  : "")
                          << ", allocated at:\n";
                for (const auto& line : stack_lines(source, blk.stack, depth)) {
                    std::cout << "          " << line << "\n";
                }
            }
        }
    }
    if (!r.holders.empty()) {
        std::cout << "\n  live memory by where it was allocated (the largest holders):\n";
        for (const auto& h : r.holders) {
            std::cout << "    " << format_bytes(h.bytes) << " in " << h.blocks
                      << " blocks, allocated at:\n";
            for (const auto& line : stack_lines(source, h.stack, depth)) {
                std::cout << "        " << line << "\n";
            }
        }
    }
    std::cout << "\n  verdict: " << verdict_line(r) << "\n  " << wrap_text(r.explanation, 88, "  ");
    for (const auto& unknown : r.unknowns) {
        std::cout << "  unknown: " << wrap_text(unknown, 86, "    ");
    }
}

//-------------------------------------------------------------------------------------------------
// [SECTION] remedies
//-------------------------------------------------------------------------------------------------

// The replay's remedies in the words' terms (analysis::oom_remedy_text).
analysis::remedy_kind outcome_kind(replay::remedy_kind kind) {
    switch (kind) {
        case replay::remedy_kind::allocator_setting:
            return analysis::remedy_kind::allocator_setting;
        case replay::remedy_kind::no_memory_cap:
            return analysis::remedy_kind::no_memory_cap;
        case replay::remedy_kind::release_private_pools:
            return analysis::remedy_kind::release_private_pools;
    }
    return analysis::remedy_kind::allocator_setting;
}

std::vector<analysis::remedy_outcome> outcomes(const replay::oom_remedies& found) {
    std::vector<analysis::remedy_outcome> out;
    for (const auto& remedy : found.remedies) {
        out.push_back({remedy.description, outcome_kind(remedy.kind),
                       found.baseline_reproduces && remedy.avoids, remedy.peak_reserved});
    }
    return out;
}

void print_remedies(const analysis::oom_report& r, const replay::oom_remedies& found) {
    if (!found.baseline_reproduces) {
        std::cout << "  " << analysis::remedies_not_checked_text() << "\n";
        return;
    }
    std::cout << "  " << wrap_text(analysis::remedies_heading(r), 88, "    ");
    const std::vector<analysis::remedy_outcome> tried = outcomes(found);
    for (const auto& remedy : tried) {
        std::cout << "    " << wrap_text(analysis::remedy_sentence(remedy), 84, "      ");
    }
    if (const auto conclusion = analysis::remedies_conclusion(r, tried)) {
        std::cout << "    " << wrap_text(*conclusion, 86, "      ");
    }
}

//-------------------------------------------------------------------------------------------------
// [SECTION] the JSON report
//-------------------------------------------------------------------------------------------------

// The remedies, and the words `memtrail oom` prints for them, so that readers of the JSON (the
// report page) say what the CLI says.
void write_remedies(json_writer& json, const analysis::oom_report& r,
                    const replay::oom_remedies& found) {
    const std::vector<analysis::remedy_outcome> tried = outcomes(found);
    json.key("remedies").begin_object().field("checked", found.baseline_reproduces);
    if (found.baseline_reproduces) {
        json.field("heading", analysis::remedies_heading(r));
    } else {
        json.field("heading", analysis::remedies_not_checked_text());
    }
    json.key("tried").begin_array();
    for (size_t i = 0; i < found.remedies.size(); ++i) {
        const auto& remedy = found.remedies[i];
        json.begin_object()
            .field("setting", remedy.description)
            .field("kind", analysis::remedy_kind_key(outcome_kind(remedy.kind)))
            .field("avoids", tried[i].avoids)
            .field("peak_reserved", remedy.peak_reserved)
            .field("peak_allocated", remedy.peak_allocated)
            .field("text", analysis::remedy_sentence(tried[i]))
            .end_object();
    }
    json.end_array();
    const auto conclusion =
        found.baseline_reproduces ? analysis::remedies_conclusion(r, tried) : std::nullopt;
    if (conclusion) {
        json.field("conclusion", *conclusion);
    } else {
        json.key("conclusion").null();
    }
    json.end_object();
}

void write_private_pools(json_writer& json, const analysis::oom_report& r, stream_labels& streams) {
    json.key("private_pools").begin_array();
    for (const auto& p : r.private_pools) {
        json.begin_object();
        if (p.pool) {
            json.field("pool", analysis::pool_name(*p.pool)).field("owner", p.owner);
        } else {
            json.key("pool").null().key("owner").null();
        }
        json.field("inferred", p.inferred)
            .field("stream", static_cast<uint64_t>(streams.names.number(p.stream)))
            .field("stream_handle", p.stream)
            .field("segments", static_cast<uint64_t>(p.segments))
            .field("reserved", p.reserved)
            .field("allocated", p.allocated)
            .field("free", p.free)
            .field("releasable", p.releasable)
            .end_object();
    }
    json.end_array();
}

void write_cap(json_writer& json, const analysis::oom_cap& cap) {
    json.key("cap").begin_object().field("binding", cap.binding).field("recorded", cap.recorded);
    if (cap.recorded) {
        json.field("fraction", cap.fraction).field("bytes", cap.lower);
    } else if (cap.binding) {
        json.field("at_least", cap.lower).field("below", cap.upper);
    }
    json.end_object();
}

void write_report(json_writer& json, const analysis::oom_report& r,
                  const snapshot::snapshot& source, stream_labels& streams) {
    json.begin_object()
        .field("entry", static_cast<uint64_t>(r.entry))
        .field("time_ns", r.time_ns)
        .field("requested", r.requested)
        .field("stream", static_cast<uint64_t>(streams.names.number(r.stream)))
        .field("stream_handle", r.stream)
        .field("pool", r.is_large ? "large" : "small");
    json.key("stack");
    write_stack(json, source, r.stack);
    json.field("device_free", r.device_free).field("device_total", r.device_total);
    json.key("device_total_assumed")
        .begin_object()
        .field("bytes", r.assumed_device_total)
        .field("source", analysis::device_total_source_name(r.total_source))
        .field("at_least", r.total_source == analysis::device_total_source::at_least)
        .end_object();
    json.key("totals");
    write_totals(json, r.totals);
    json.field("fragmentation", r.fragmentation).key("free_by_pool").begin_array();
    for (const auto& p : r.free_by_pool) {
        json.begin_object()
            .field("pool", p.is_large ? "large" : "small")
            .field("stream", static_cast<uint64_t>(streams.names.number(p.stream)))
            .field("stream_handle", p.stream)
            .field("largest_free", p.largest_free)
            .field("free", p.free)
            .field("free_blocks", static_cast<uint64_t>(p.free_blocks))
            .field("pending_free", p.pending_free)
            .end_object();
    }
    json.end_array().key("holders").begin_array();
    for (const auto& h : r.holders) {
        json.begin_object()
            .field("bytes", h.bytes)
            .field("blocks", static_cast<uint64_t>(h.blocks));
        json.key("stack");
        write_stack(json, source, h.stack);
        json.end_object();
    }
    json.end_array().key("blockers").begin_array();
    for (const auto& b : r.blockers) {
        json.begin_object()
            .field("segment", b.segment_address)
            .field("range_address", b.range_address)
            .field("range_size", b.range_size)
            .field("live_bytes", b.live_bytes)
            .field("only_pending_frees", b.only_pending_frees())
            .key("blocks")
            .begin_array();
        for (const auto& blk : b.blocks) {
            json.begin_object()
                .field("address", blk.address)
                .field("size", blk.size)
                .field("state", snapshot::block_state_name(blk.state));
            json.key("stack");
            write_stack(json, source, blk.stack);
            json.end_object();
        }
        json.end_array().end_object();
    }
    json.end_array()
        .field("segment_size", r.segment_size)
        .field("private_pool_free", r.private_pool_free)
        .field("private_pool_releasable", r.private_pool_releasable)
        .field("usable_free", r.usable_free);
    write_private_pools(json, r, streams);
    write_cap(json, r.cap);
    if (r.outside_known) {
        json.field("outside", r.outside);
    }
    if (r.accounting) {
        json.key("outside_by_library").begin_object();
        for (const auto& [library, bytes] : r.accounting->outside_by_library) {
            json.field(library, bytes);
        }
        json.end_object()
            .field("outside_context", r.accounting->context)
            .field("outside_other_processes", r.accounting->other_processes);
    }
    json.field("verdict", analysis::verdict_key(r.verdict))
        .field("verdict_text", analysis::verdict_name(r.verdict));
    if (r.secondary) {
        json.field("secondary", analysis::verdict_key(*r.secondary))
            .field("secondary_text", analysis::verdict_name(*r.secondary));
    } else {
        json.key("secondary").null();
    }
    json.field("explanation", r.explanation).key("unknown").begin_array();
    for (const auto& unknown : r.unknowns) {
        json.value(unknown);
    }
    json.end_array();
}

}  // namespace

//-------------------------------------------------------------------------------------------------
// [SECTION] the command
//-------------------------------------------------------------------------------------------------

command_spec oom_spec() {
    return {
        "oom",
        "FILE [--entry N] [--blockers N] [--depth D] [--device N] [--device-memory BYTES] "
        "[--memory-fraction F] [--raw-streams] [--no-remedies] [--all-frames] [--json]",
        "For each out-of-memory entry in the trace: what was asked and from where, what the "
        "device and the cache had, the largest free block per pool and stream, the live "
        "blocks that pinned partly free segments, the private pools and their owners, a "
        "primary cause and where true a secondary one (capacity, memory cap, outside this "
        "allocator, fragmentation, pending cross-stream frees, private pools) and the "
        "remedies that avoid it, each checked by replaying the trace under it.",
        "Exits 0 also when the trace has no OOM (it says so). A PyTorch pickle records "
        "neither the device's total memory nor the memory fraction: the report assumes at "
        "least what the allocator held plus what the device had free, and infers the cap "
        "from the trace (the failed request bounds it from above, the most ever reserved "
        "from below), and says so; --device-memory and --memory-fraction settle both. "
        "Streams are `stream 0` (the default) and `stream 1`, `stream 2`... in order of "
        "first use; --raw-streams adds their handles (--json has both).\n",
        1,
        1,
        {device_option(),
         all_frames_option(),
         {"--entry", "", "N", "only the oom entry with this trace index", false},
         {"--blockers", "", "N", "blockers and largest holders to list (default 5)", false},
         depth_option(8),
         {"--device-memory", "", "BYTES",
          "the device's total memory, when the snapshot does not record it", false},
         {"--memory-fraction", "", "F",
          "the per-process memory fraction the program set (needs the device's total)", false},
         {"--raw-streams", "", "", "show each stream's raw handle beside its short name", false},
         {"--no-remedies", "", "", "skip the what-if replays that check remedies", false}}};
}

int run_oom(const parsed_arguments& args) {
    const opened_file file = open_file(args.positional[0], args, frames_shown(args));
    analysis::oom_options options;
    options.max_blockers =
        args.value("--blockers") ? parse_count_option("--blockers", *args.value("--blockers")) : 5;
    if (const auto total = args.value("--device-memory")) {
        options.device_total = parse_size_option("--device-memory", *total);
    }
    if (const auto fraction = args.value("--memory-fraction")) {
        options.memory_fraction = parse_fraction_option("--memory-fraction", *fraction);
        if (!(options.memory_fraction > 0.0) ||
            (!options.device_total && file.model.source().info.devices.empty())) {
            throw usage_error(
                "--memory-fraction: give a fraction above 0, and the device's total with "
                "--device-memory when the snapshot does not record it (a PyTorch pickle)");
        }
    }
    stream_labels streams{analysis::stream_names(file.model.source(), file.model.device()),
                          args.has("--raw-streams")};
    const size_t depth = depth_of(args, 8);
    std::vector<size_t> entries = analysis::oom_entries(file.model);
    if (const auto only = args.value("--entry")) {
        const size_t entry = parse_count_option("--entry", *only);
        if (std::find(entries.begin(), entries.end(), entry) == entries.end()) {
            throw usage_error("--entry: trace entry " + *only + " is not an oom entry");
        }
        entries = {entry};
    }
    const snapshot::snapshot& source = file.model.source();
    auto remedies_for = [&](const analysis::oom_report& r) {
        replay::oom_remedy_options remedy;
        remedy.device = file.model.device();
        remedy.device_memory = r.assumed_device_total;
        if (r.cap.recorded) {
            remedy.memory_fraction = r.cap.fraction;
        } else if (r.cap.binding) {
            remedy.cap_bytes = r.cap.lower;
        }
        remedy.try_releasing_private_pools = r.private_pool_releasable > 0;
        return replay::try_oom_remedies(source, r.entry, remedy);
    };
    const bool remedies = !args.has("--no-remedies");
    if (args.json) {
        json_writer json(std::cout);
        json.begin_object().field("path", file.path).field("device", file.model.device());
        json.key("ooms").begin_array();
        for (const size_t entry : entries) {
            const analysis::oom_report r = analysis::analyze_oom(file.model, entry, options);
            write_report(json, r, source, streams);
            if (remedies) {
                write_remedies(json, r, remedies_for(r));
            }
            json.end_object();
        }
        json.end_array().end_object();
        return exit_ok;
    }
    if (entries.empty()) {
        std::cout << file.path << ": no OOM recorded in the trace of device " << file.model.device()
                  << " (" << file.model.event_count() << " entries)\n";
        return exit_ok;
    }
    std::cout << file.path << ", device " << file.model.device() << ": " << entries.size()
              << (entries.size() == 1 ? " OOM" : " OOMs") << "\n\n";
    for (const size_t entry : entries) {
        const analysis::oom_report r = analysis::analyze_oom(file.model, entry, options);
        print_report(r, source, depth, streams);
        if (remedies) {
            print_remedies(r, remedies_for(r));
        }
        std::cout << "\n";
    }
    return exit_ok;
}

}  // namespace memtrail::cli
