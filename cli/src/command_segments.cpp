// memtrail segments FILE : per-segment usage and totals, like PyTorch's `_memory_viz.py stats`.

#include <iostream>

#include "commands.hpp"
#include "common.hpp"
#include "memtrail/analysis/segment_summary.hpp"
#include "memtrail/analysis/size_text.hpp"
#include "report_json.hpp"
#include "text_table.hpp"

namespace memtrail::cli {
namespace {

using analysis::format_bytes;

// '#' allocated, '+' pending free, '.' free, in address order, `width` characters.
std::string usage_bar(const snapshot::segment& seg, size_t width) {
    std::string bar(width, '.');
    for (const auto& blk : seg.blocks) {
        if (blk.state == snapshot::block_state::inactive) {
            continue;
        }
        const char mark = blk.state == snapshot::block_state::active_allocated ? '#' : '+';
        const double scale = static_cast<double>(width) / static_cast<double>(seg.total_size);
        const auto first =
            static_cast<size_t>(static_cast<double>(blk.address - seg.address) * scale);
        auto last = static_cast<size_t>(
            static_cast<double>(blk.address - seg.address + blk.size) * scale + 0.999);
        last = std::min(std::max(last, first + 1), width);
        for (size_t i = first; i < last; ++i) {
            bar[i] = mark;
        }
    }
    return bar;
}

}  // namespace

command_spec segments_spec() {
    return {"segments",
            "FILE [--at EVENT|peak|end] [--device N] [--json]",
            "Every segment (device allocation) with what callers hold in it, what waits for "
            "other streams, what is free and in how large a piece; then the totals.",
            "In the usage bar '#' is allocated, '+' pending free (waiting for other streams), "
            "'.' free.\n",
            1,
            1,
            {at_option(), device_option()}};
}

int run_segments(const parsed_arguments& args) {
    const opened_file file = open_file(args.positional[0], args);
    const moment at = resolve_at(file.model, args.value("--at"));
    const analysis::memory_state state = file.model.state_after(at.position);
    const analysis::segment_summary summary = analysis::summarize_segments(state);
    const auto& t = summary.totals;
    if (args.json) {
        json_writer json(std::cout);
        json.begin_object().field("path", file.path).field("device", file.model.device());
        json.key("at");
        write_moment(json, file.model, at);
        json.key("segments").begin_array();
        for (const auto& s : summary.segments) {
            json.begin_object()
                .field("address", s.address)
                .field("size", s.total_size)
                .field("stream", s.stream)
                .field("pool", s.is_large ? "large" : "small")
                .field("expandable", s.is_expandable)
                .field("allocated", s.allocated)
                .field("pending_free", s.pending_free)
                .field("free", s.free)
                .field("largest_free", s.largest_free)
                .field("requested", s.requested)
                .field("blocks", static_cast<uint64_t>(s.blocks))
                .field("fragmentation", s.fragmentation())
                .end_object();
        }
        json.end_array().key("totals");
        write_totals(json, t);
        json.end_object();
        return exit_ok;
    }
    std::cout << file.path << ", device " << file.model.device() << ", at " << at.label << ": "
              << summary.segments.size() << " segments\n\n";
    text_table table({"<address", "size", "stream", "<pool", "allocated", "pending", "free",
                      "largest free", "blocks", "frag", "<usage"});
    for (size_t i = 0; i < summary.segments.size(); ++i) {
        const auto& s = summary.segments[i];
        table.add_row(
            {hex_address(s.address), format_bytes(s.total_size), std::to_string(s.stream),
             std::string(s.is_large ? "large" : "small") + (s.is_expandable ? " exp" : ""),
             format_bytes(s.allocated), format_bytes(s.pending_free), format_bytes(s.free),
             format_bytes(s.largest_free), std::to_string(s.blocks), percent(s.fragmentation()),
             usage_bar(state.segments[i], 24)});
    }
    table.print(std::cout);
    std::cout << "\ntotal reserved:   " << format_bytes(t.reserved) << "\n"
              << "total allocated:  " << format_bytes(t.allocated) << "\n"
              << "pending free:     " << format_bytes(t.pending_free) << "\n"
              << "free in segments: " << format_bytes(t.free) << " (largest block "
              << format_bytes(t.largest_free) << ")\n"
              << "fragmentation:    " << percent(t.fragmentation()) << "\n";
    return exit_ok;
}

}  // namespace memtrail::cli
