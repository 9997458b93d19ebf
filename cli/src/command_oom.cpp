// memtrail oom FILE : why each out-of-memory in the trace happened.

#include <iostream>

#include "commands.hpp"
#include "common.hpp"
#include "memtrail/analysis/oom_report.hpp"
#include "memtrail/analysis/size_text.hpp"
#include "memtrail/replay/oom_remedies.hpp"
#include "report_json.hpp"
#include "text_table.hpp"

namespace memtrail::cli {
namespace {

using analysis::format_bytes;

void print_report(const analysis::oom_report& r, const snapshot::snapshot& source, size_t depth) {
    std::cout << "OOM at entry " << r.entry << ": " << format_bytes(r.requested) << " ("
              << r.requested << " bytes) on stream " << r.stream << ", "
              << (r.is_large ? "large" : "small") << " pool\n";
    for (const auto& line : stack_lines(source, r.stack, depth)) {
        std::cout << "    " << line << "\n";
    }
    std::cout << "\n";
    text_table table({"<", "", "<"});
    table.add_row({"device free", format_bytes(r.device_free), "as the device reported it"});
    table.add_row(
        {"device total", r.device_total == 0 ? "unknown" : format_bytes(r.device_total), ""});
    table.add_row({"reserved", format_bytes(r.totals.reserved),
                   std::to_string(r.totals.segments) + " segments"});
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
        pools.add_row({p.is_large ? "large" : "small", std::to_string(p.stream),
                       format_bytes(p.largest_free), format_bytes(p.free),
                       std::to_string(p.free_blocks), format_bytes(p.pending_free)});
    }
    pools.print(std::cout, "    ");

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
    std::cout << "\n  verdict: " << analysis::verdict_name(r.verdict) << "\n  "
              << wrap_text(r.explanation, 88, "  ");
    for (const auto& unknown : r.unknowns) {
        std::cout << "  unknown: " << wrap_text(unknown, 86, "    ");
    }
}

void print_remedies(const replay::oom_remedies& found) {
    if (!found.baseline_reproduces) {
        std::cout << "  remedies: not checked: replaying the trace under its own settings did not "
                     "fail at this entry, so a what-if replay proves nothing here\n";
        return;
    }
    std::cout << "  remedies, each checked by replaying the trace under it:\n";
    bool any = false;
    for (const auto& remedy : found.remedies) {
        any = any || remedy.avoids;
        std::cout << "    with " << remedy.description << " this OOM "
                  << (remedy.avoids ? "does not happen" : "still happens") << " (peak reserved "
                  << format_bytes(remedy.peak_reserved) << ")\n";
    }
    if (!any) {
        std::cout << "    no allocator setting avoids it: reduce the memory in use\n";
    }
}

void write_remedies(json_writer& json, const replay::oom_remedies& found) {
    json.key("remedies").begin_object().field("checked", found.baseline_reproduces);
    json.key("tried").begin_array();
    for (const auto& remedy : found.remedies) {
        json.begin_object()
            .field("setting", remedy.description)
            .field("avoids", found.baseline_reproduces && remedy.avoids)
            .field("peak_reserved", remedy.peak_reserved)
            .field("peak_allocated", remedy.peak_allocated)
            .end_object();
    }
    json.end_array().end_object();
}

void write_report(json_writer& json, const analysis::oom_report& r,
                  const snapshot::snapshot& source) {
    json.begin_object()
        .field("entry", static_cast<uint64_t>(r.entry))
        .field("time_ns", r.time_ns)
        .field("requested", r.requested)
        .field("stream", r.stream)
        .field("pool", r.is_large ? "large" : "small");
    json.key("stack");
    write_stack(json, source, r.stack);
    json.field("device_free", r.device_free).field("device_total", r.device_total);
    json.key("totals");
    write_totals(json, r.totals);
    json.field("fragmentation", r.fragmentation).key("free_by_pool").begin_array();
    for (const auto& p : r.free_by_pool) {
        json.begin_object()
            .field("pool", p.is_large ? "large" : "small")
            .field("stream", p.stream)
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
        .field("usable_free", r.usable_free);
    if (r.outside_known) {
        json.field("outside", r.outside);
    }
    if (r.allowed) {
        json.field("allowed", r.allowed);
    }
    json.field("verdict", analysis::verdict_key(r.verdict))
        .field("verdict_text", analysis::verdict_name(r.verdict))
        .field("explanation", r.explanation)
        .key("unknown")
        .begin_array();
    for (const auto& unknown : r.unknowns) {
        json.value(unknown);
    }
    json.end_array();
}

}  // namespace

command_spec oom_spec() {
    return {"oom",
            "FILE [--entry N] [--blockers N] [--depth D] [--device N] [--device-memory BYTES] "
            "[--no-remedies] [--all-frames] [--json]",
            "For each out-of-memory entry in the trace: what was asked and from where, what the "
            "device and the cache had, the largest free block per pool and stream, the live "
            "blocks that pinned partly free segments, a verdict (capacity, memory cap, outside "
            "this allocator, fragmentation, pending cross-stream frees, private pools) and the "
            "remedies that avoid it, each checked by replaying the trace under it.",
            "Exits 0 also when the trace has no OOM (it says so). A PyTorch pickle does not "
            "record the device's total memory: give --device-memory to measure what was held "
            "outside this allocator.\n",
            1,
            1,
            {device_option(),
             all_frames_option(),
             {"--entry", "", "N", "only the oom entry with this trace index", false},
             {"--blockers", "", "N", "blockers and largest holders to list (default 5)", false},
             {"--depth", "", "D", "frames to print per stack (default 8)", false},
             {"--device-memory", "", "BYTES",
              "the device's total memory, when the snapshot does not record it", false},
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
    const size_t depth =
        args.value("--depth") ? parse_count_option("--depth", *args.value("--depth")) : 8;
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
        remedy.device_memory = r.device_total;
        if (r.verdict == analysis::oom_verdict::memory_cap) {
            // Refuse what the original refused: the cap lies between what was reserved and
            // what the request would have added.
            remedy.inferred_cap_bytes = r.allowed ? r.allowed : r.totals.reserved;
        }
        return replay::try_oom_remedies(source, r.entry, remedy);
    };
    const bool remedies = !args.has("--no-remedies");
    if (args.json) {
        json_writer json(std::cout);
        json.begin_object().field("path", file.path).field("device", file.model.device());
        json.key("ooms").begin_array();
        for (const size_t entry : entries) {
            const analysis::oom_report r = analysis::analyze_oom(file.model, entry, options);
            write_report(json, r, source);
            if (remedies) {
                write_remedies(json, remedies_for(r));
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
        print_report(r, source, depth);
        if (remedies) {
            print_remedies(remedies_for(r));
        }
        std::cout << "\n";
    }
    return exit_ok;
}

}  // namespace memtrail::cli
