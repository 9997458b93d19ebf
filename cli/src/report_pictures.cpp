#include "detail/report_pictures.hpp"

#include <algorithm>
#include <string>
#include <unordered_map>
#include <vector>

#include "memtrail/analysis/oom_report.hpp"
#include "memtrail/analysis/stacked_timeline.hpp"
#include "memtrail/analysis/timeline.hpp"

namespace memtrail::cli {
namespace {

template <typename T, typename Get>
void write_numbers(json_writer& json, const std::vector<T>& items, Get get) {
    json.begin_array();
    for (const T& item : items) {
        json.value(static_cast<uint64_t>(get(item)));
    }
    json.end_array();
}

void write_curve(json_writer& json, const std::vector<analysis::curve_bucket>& buckets) {
    json.begin_object().key("min");
    write_numbers(json, buckets, [](const analysis::curve_bucket& b) { return b.min; });
    json.key("max");
    write_numbers(json, buckets, [](const analysis::curve_bucket& b) { return b.max; });
    json.end_object();
}

uint8_t block_state_code(snapshot::block_state state) {
    switch (state) {
        case snapshot::block_state::active_allocated:
            return 0;
        case snapshot::block_state::active_pending_free:
            return 1;
        case snapshot::block_state::inactive:
            return 2;
    }
    return 2;
}

// The blocks of `segment` as [offset, size, state] triples; runs in one state merged when the
// segment has more blocks than a row has pixels to show them.
void write_blocks(json_writer& json, const snapshot::segment& segment) {
    const bool merge = segment.blocks.size() > report_segment_blocks_kept;
    json.begin_array();
    size_t i = 0;
    while (i < segment.blocks.size()) {
        const snapshot::block& first = segment.blocks[i];
        uint64_t size = first.size;
        size_t next = i + 1;
        while (merge && next < segment.blocks.size() && segment.blocks[next].state == first.state) {
            size += segment.blocks[next].size;
            ++next;
        }
        json.begin_array()
            .value(first.address - segment.address)
            .value(size)
            .value(static_cast<uint64_t>(block_state_code(first.state)))
            .end_array();
        i = next;
    }
    json.end_array();
}

}  // namespace

void write_timeline(json_writer& json, const analysis::device_model& model,
                    const analysis::category_map& categories, size_t peak_position) {
    const size_t positions = model.event_count() + 1;
    const auto allocated = analysis::buckets_by_position(model, analysis::series::allocated, 0,
                                                         positions, report_timeline_columns);
    const auto reserved = analysis::buckets_by_position(model, analysis::series::reserved, 0,
                                                        positions, report_timeline_columns);
    std::vector<analysis::column_span> spans;
    for (const auto& b : allocated) {
        spans.push_back({b.first, b.last});
    }
    const analysis::stacked_timeline stacked = analysis::stack_allocations(
        model, categories, analysis::stack_key::category, spans, false, 0);

    json.begin_object().field("entries", static_cast<uint64_t>(model.event_count()));
    json.key("x");
    write_numbers(json, allocated, [](const analysis::curve_bucket& b) { return b.first; });
    json.key("allocated");
    write_curve(json, allocated);
    json.key("reserved");
    write_curve(json, reserved);
    json.key("layers").begin_array();
    for (size_t layer = 0; layer < stacked.keys.size(); ++layer) {
        bool any = false;
        for (size_t column = 0; column < spans.size() && !any; ++column) {
            any = stacked.at(column, layer) != 0;
        }
        if (!any) {
            continue;
        }
        json.begin_object()
            .field("category", analysis::category_name(
                                   static_cast<analysis::memory_category>(stacked.keys[layer])))
            .key("bytes")
            .begin_array();
        for (size_t column = 0; column < spans.size(); ++column) {
            json.value(stacked.at(column, layer));
        }
        json.end_array().end_object();
    }
    json.end_array()
        .field("peak_position", static_cast<uint64_t>(peak_position))
        .field("peak_allocated", model.values(analysis::series::allocated)[peak_position]);
    json.key("oom_positions").begin_array();
    for (const size_t entry : analysis::oom_entries(model)) {
        json.value(static_cast<uint64_t>(entry + 1));  // the state after the OOM entry
    }
    json.end_array().end_object();
}

void write_segment_map(json_writer& json, const analysis::memory_state& state) {
    json.begin_object().field("position", static_cast<uint64_t>(state.position));
    json.key("segments").begin_array();
    for (const snapshot::segment& s : state.segments) {
        json.begin_object()
            .field("address", s.address)
            .field("size", s.total_size)
            .field("pool", s.is_large ? "large" : "small")
            .field("private", s.pool_id_first != 0 || s.pool_id_second != 0)
            .field("expandable", s.is_expandable)
            .field("stream", s.stream);
        json.key("blocks");
        write_blocks(json, s);
        json.end_object();
    }
    json.end_array().end_object();
}

void write_flame(json_writer& json, const analysis::flame_graph& graph) {
    const uint64_t smallest =
        static_cast<uint64_t>(static_cast<double>(graph.total()) * report_flame_smallest_share);
    std::vector<uint32_t> kept;  // node indices, parents before children
    std::vector<int64_t> index_of(graph.nodes.size(), -1);
    std::vector<uint32_t> pending = {0};
    while (!graph.nodes.empty() && !pending.empty()) {
        const uint32_t node = pending.back();
        pending.pop_back();
        index_of[node] = static_cast<int64_t>(kept.size());
        kept.push_back(node);
        for (const uint32_t child : graph.nodes[node].children) {
            if (graph.nodes[child].bytes > smallest) {
                pending.push_back(child);
            }
        }
    }
    std::vector<std::string> names;
    std::unordered_map<std::string, uint64_t> name_index;
    json.begin_object().field("total", graph.total()).key("nodes").begin_array();
    for (const uint32_t node : kept) {
        const analysis::flame_node& n = graph.nodes[node];
        const auto [it, added] = name_index.try_emplace(n.name, names.size());
        if (added) {
            names.push_back(n.name);
        }
        json.begin_array()
            .value(it->second)
            .value(node == 0 ? int64_t{-1} : index_of[n.parent])
            .value(n.bytes)
            .value(n.self_bytes)
            .end_array();
    }
    json.end_array().key("names").begin_array();
    for (const std::string& name : names) {
        json.value(name);
    }
    json.end_array().end_object();
}

}  // namespace memtrail::cli
