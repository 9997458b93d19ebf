#include "detail/summary_json.hpp"

#include <cstdio>

#include "detail/json_writer.hpp"

namespace memtrail::cli {

namespace {

using namespace analysis;

std::string hex(uint64_t value) {
    char text[17];
    std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(value));
    return text;
}

void write_categories(json_writer& json, const category_bytes& bytes) {
    json.begin_object();
    for (size_t c = 0; c < memory_category_count; ++c) {
        json.field(category_name(memory_category(c)), bytes[c]);
    }
    json.end_object();
}

void write_identity(json_writer& json, const summary_identity& id) {
    json.begin_object()
        .field("job_id", id.job_id)
        .field("rank", id.rank)
        .field("local_rank", id.local_rank)
        .field("world_size", id.world_size)
        .field("source", identity_source_name(id.source))
        .field("host", id.host)
        .field("pid", id.pid)
        .field("producer", id.producer)
        .field("device", id.device)
        .field("device_name", id.device_name)
        .field("device_memory", id.device_memory)
        .field("allocator_conf", id.allocator_conf)
        .field("settings_hash", hex(id.settings_hash));
    json.key("devices").begin_array();
    for (const auto& [name, memory] : id.device_kinds) {
        json.begin_object().field("name", name).field("memory", memory).end_object();
    }
    json.end_array()
        .field("first_time_ns", id.first_time_ns)
        .field("last_time_ns", id.last_time_ns)
        .end_object();
}

void write_peak(json_writer& json, const summary_peak& p) {
    json.begin_object()
        .field("bytes", p.bytes)
        .field("position", static_cast<uint64_t>(p.position))
        .field("time_ns", p.time_ns)
        .field("step", static_cast<uint64_t>(p.step))
        .field("annotation", p.annotation)
        .end_object();
}

void write_optional(json_writer& json, std::string_view key, const std::optional<uint64_t>& v) {
    json.key(key);
    if (v) {
        json.value(*v);
    } else {
        json.null();
    }
}

void write_ooms(json_writer& json, const std::vector<summary_oom>& ooms) {
    json.begin_array();
    for (const summary_oom& o : ooms) {
        json.begin_object()
            .field("entry", static_cast<uint64_t>(o.entry))
            .field("time_ns", o.time_ns)
            .field("requested", o.requested)
            .field("verdict", o.verdict)
            .field("explanation", o.explanation);
        write_optional(json, "outside_allocator", o.outside_allocator);
        json.key("categories");
        write_categories(json, o.categories);
        json.end_object();
    }
    json.end_array();
}

void write_stacks(json_writer& json, const std::vector<summary_stack>& stacks) {
    json.begin_array();
    for (const summary_stack& s : stacks) {
        json.begin_object()
            .field("hash", hex(s.hash))
            .field("bytes", s.bytes)
            .field("blocks", static_cast<uint64_t>(s.blocks))
            .field("category", category_name(s.category));
        json.key("frames").begin_array();
        for (const std::string& f : s.frames) {
            json.value(f);
        }
        json.end_array().end_object();
    }
    json.end_array();
}

void write_sequence(json_writer& json, const rank_summary& s) {
    json.field("sequence_hash", hex(s.sequence_hash)).key("sequence").begin_array();
    for (const sequence_chunk& c : s.sequence) {
        json.begin_object()
            .field("first_entry", static_cast<uint64_t>(c.first_entry))
            .field("first_step", static_cast<uint64_t>(c.first_step))
            .field("hash", hex(c.hash))
            .end_object();
    }
    json.end_array();
}

void write_curve(json_writer& json, const std::vector<curve_point>& curve) {
    json.begin_object().key("positions").begin_array();
    for (const curve_point& p : curve) {
        json.value(static_cast<uint64_t>(p.position));
    }
    json.end_array().key("allocated").begin_array();
    for (const curve_point& p : curve) {
        json.value(p.allocated);
    }
    json.end_array().key("reserved").begin_array();
    for (const curve_point& p : curve) {
        json.value(p.reserved);
    }
    json.end_array().end_object();
}

}  // namespace

void write_summary_json(std::ostream& out, const rank_summary& s) {
    json_writer json(out);
    json.begin_object()
        .field("format", summary_format_name)
        .field("version", s.version)
        .field("path", s.path)
        .field("file_kind", s.file_kind);
    json.key("identity");
    write_identity(json, s.identity);
    json.field("entries", static_cast<uint64_t>(s.entries)).field("dropped", s.dropped);
    json.key("peak_allocated");
    write_peak(json, s.peak_allocated);
    json.key("peak_reserved");
    write_peak(json, s.peak_reserved);
    json.field("end_allocated", s.end_allocated)
        .field("end_reserved", s.end_reserved)
        .field("allocations", s.allocations)
        .field("device_allocations", s.device_allocations)
        .field("oom_count", s.oom_count)
        .field("job_kind", s.job_kind)
        .field("step_source", s.step_source)
        .field("steps", static_cast<uint64_t>(s.steps));
    json.key("categories_at_peak");
    write_categories(json, s.categories_at_peak);
    json.key("fragmentation_at_peak_reserved")
        .begin_object()
        .field("free", s.free_at_peak_reserved)
        .field("largest_free", s.largest_free_at_peak_reserved)
        .field("fragmentation", s.fragmentation_at_peak_reserved)
        .end_object();
    json.key("ooms");
    write_ooms(json, s.ooms);
    write_optional(json, "outside_allocator", s.outside_allocator);
    json.field("stack_frames", s.all_frames ? "all" : "folded").key("top_stacks");
    write_stacks(json, s.top_stacks);
    json.field("unstacked_at_peak", s.unstacked_at_peak).key("stack_sketch").begin_array();
    for (const uint64_t h : s.stack_sketch) {
        json.value(hex(h));
    }
    json.end_array();
    write_sequence(json, s);
    json.key("curve");
    write_curve(json, s.curve);
    json.end_object();
    out << "\n";
}

}  // namespace memtrail::cli
