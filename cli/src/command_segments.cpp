// memtrail segments FILE : per-segment usage and totals, like PyTorch's `_memory_viz.py stats`.

#include <iostream>
#include <map>

#include "detail/commands.hpp"
#include "detail/common.hpp"
#include "detail/report_json.hpp"
#include "detail/text_table.hpp"
#include "memtrail/analysis/segment_pools.hpp"
#include "memtrail/analysis/segment_summary.hpp"
#include "memtrail/analysis/size_text.hpp"
#include "memtrail/analysis/stream_names.hpp"

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

// "-" for the default pools (known, or the normal case its stream shows), "(1, 0) CUDA graph"
// for a private one ("~" when inferred from the segment's stream), "?" when the snapshot no
// longer holds the segment and its stream says nothing.
std::string private_pool_cell(const std::optional<analysis::resolved_pool>& resolved) {
    if (!resolved) {
        return "?";
    }
    if (resolved->pool.is_default()) {
        return "-";
    }
    return analysis::pool_name(resolved->pool) + " " + analysis::pool_kind(resolved->pool) +
           (resolved->inferred ? " ~" : "");
}

// Each private pool in the table with its owner and its memory.
void print_private_pools(const analysis::memory_state& state,
                         const analysis::segment_pools& pools) {
    std::map<analysis::segment_pool, std::pair<size_t, uint64_t>> found;  // segments, bytes
    bool any_inferred = false, any_unknown = false;
    for (const auto& seg : state.segments) {
        const auto resolved = pools.resolve(seg);
        any_unknown = any_unknown || !resolved;
        if (resolved && !resolved->pool.is_default()) {
            auto& [segments, bytes] = found[resolved->pool];
            ++segments;
            bytes += seg.total_size;
            any_inferred = any_inferred || resolved->inferred;
        }
    }
    if (found.empty() && !any_unknown) {
        return;
    }
    std::cout << "\nprivate pools (they serve only their owner's allocations):\n";
    for (const auto& [pool, usage] : found) {
        std::cout << "  " << analysis::pool_name(pool) << ": " << pools.owner(pool) << ", "
                  << usage.first << " segments, " << format_bytes(usage.second) << "\n";
    }
    if (any_inferred) {
        std::cout << "  ~ inferred from the segment's stream (the snapshot names the pools only of "
                     "the segments it still holds)\n";
    }
    if (any_unknown) {
        std::cout << "  ? the snapshot no longer holds the segment and its stream does not say\n";
    }
}

}  // namespace

command_spec segments_spec() {
    return {
        "segments",
        "FILE [--at EVENT|peak|end] [--device N] [--raw-streams] [--json]",
        "Every segment (device allocation) with its stream and private pool, what callers "
        "hold in it, what waits for other streams, what is free and in how large a piece; "
        "then the private pools with their owners, and the totals.",
        "In the usage bar '#' is allocated, '+' pending free (waiting for other streams), "
        "'.' free. Streams are `stream 0` (the default) and `stream 1`, `stream 2`... in "
        "order of first use; --raw-streams adds their handles (--json has both). The private "
        "pool is '-' for the default pools, '(1, 0) CUDA graph' for a graph's own pool, "
        "'(0, 1) MemPool' for a torch.cuda.MemPool or a pool shared by graphs.\n",
        1,
        1,
        {at_option(),
         device_option(),
         {"--raw-streams", "", "", "show each stream's raw handle beside its short name", false}}};
}

int run_segments(const parsed_arguments& args) {
    const opened_file file = open_file(args.positional[0], args);
    const moment at = resolve_at(file.model, args.value("--at"));
    const analysis::memory_state state = file.model.state_after(at.position);
    const analysis::segment_summary summary = analysis::summarize_segments(state);
    const auto& t = summary.totals;
    analysis::stream_names streams(file.model.source(), file.model.device());
    const analysis::segment_pools pools(file.model.source(), file.model.device());
    if (args.json) {
        json_writer json(std::cout);
        json.begin_object().field("path", file.path).field("device", file.model.device());
        json.key("at");
        write_moment(json, file.model, at);
        json.key("segments").begin_array();
        for (size_t i = 0; i < summary.segments.size(); ++i) {
            const auto& s = summary.segments[i];
            json.begin_object()
                .field("address", s.address)
                .field("size", s.total_size)
                .field("stream", static_cast<uint64_t>(streams.number(s.stream)))
                .field("stream_handle", s.stream);
            if (const auto resolved = pools.resolve(state.segments[i])) {
                json.field("private_pool", analysis::pool_name(resolved->pool))
                    .field("private_pool_owner", pools.owner(resolved->pool))
                    .field("private_pool_inferred", resolved->inferred);
            } else {
                json.key("private_pool").null();
            }
            json.field("pool", s.is_large ? "large" : "small")
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
    const bool raw_streams = args.has("--raw-streams");
    text_table table({"<address", "size", "<stream", "<pool", "<private pool", "allocated",
                      "pending", "free", "largest free", "blocks", "frag", "<usage"});
    for (size_t i = 0; i < summary.segments.size(); ++i) {
        const auto& s = summary.segments[i];
        table.add_row(
            {hex_address(s.address), format_bytes(s.total_size),
             raw_streams ? streams.name_with_handle(s.stream) : streams.name(s.stream),
             std::string(s.is_large ? "large" : "small") + (s.is_expandable ? " exp" : ""),
             private_pool_cell(pools.resolve(state.segments[i])), format_bytes(s.allocated),
             format_bytes(s.pending_free), format_bytes(s.free), format_bytes(s.largest_free),
             std::to_string(s.blocks), percent(s.fragmentation()),
             usage_bar(state.segments[i], 24)});
    }
    table.print(std::cout);
    print_private_pools(state, pools);
    std::cout << "\ntotal reserved:   " << format_bytes(t.reserved) << "\n"
              << "total allocated:  " << format_bytes(t.allocated) << "\n"
              << "pending free:     " << format_bytes(t.pending_free) << "\n"
              << "free in segments: " << format_bytes(t.free) << " (largest block "
              << format_bytes(t.largest_free) << ")\n"
              << "fragmentation:    " << percent(t.fragmentation()) << "\n";
    return exit_ok;
}

}  // namespace memtrail::cli
