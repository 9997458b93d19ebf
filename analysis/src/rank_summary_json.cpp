#include "memtrail/analysis/rank_summary_json.hpp"

#include <cstdlib>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>

#include "memtrail/snapshot/format_error.hpp"
#include "memtrail/snapshot/json_value.hpp"

namespace memtrail::analysis {

using snapshot::json_error;
using snapshot::json_value;
using snapshot::parse_json;

namespace {

uint64_t from_hex(const json_value& v, std::string_view what) {
    const std::string& text = v.as_string(what);
    char* end = nullptr;
    const unsigned long long value = std::strtoull(text.c_str(), &end, 16);
    if (text.empty() || text.size() > 16 || *end != '\0') {
        throw json_error(std::string(what) + ": expected 16 hex digits, got '" + text + "'");
    }
    return value;
}

category_bytes read_categories(const json_value& v, std::string_view what) {
    category_bytes out{};
    for (size_t c = 0; c < memory_category_count; ++c) {
        const std::string_view name = category_name(memory_category(c));
        out[c] = v.at(name, what).as_uint(std::string(what) + "." + std::string(name));
    }
    return out;
}

summary_identity read_identity(const json_value& v) {
    constexpr std::string_view what = "identity";
    summary_identity id;
    id.job_id = v.at("job_id", what).as_string("identity.job_id");
    id.rank = static_cast<int>(v.at("rank", what).as_int("identity.rank"));
    id.local_rank = static_cast<int>(v.at("local_rank", what).as_int("identity.local_rank"));
    id.world_size = static_cast<int>(v.at("world_size", what).as_int("identity.world_size"));
    const std::string& source = v.at("source", what).as_string("identity.source");
    if (!parse_identity_source(source, id.source)) {
        throw json_error("identity.source: expected snapshot, file name or none, got '" + source +
                         "'");
    }
    id.host = v.at("host", what).as_string("identity.host");
    id.pid = v.at("pid", what).as_int("identity.pid");
    id.producer = v.at("producer", what).as_string("identity.producer");
    id.device = static_cast<int>(v.at("device", what).as_int("identity.device"));
    id.device_name = v.at("device_name", what).as_string("identity.device_name");
    id.device_memory = v.at("device_memory", what).as_uint("identity.device_memory");
    id.allocator_conf = v.at("allocator_conf", what).as_string("identity.allocator_conf");
    id.settings_hash = from_hex(v.at("settings_hash", what), "identity.settings_hash");
    for (const json_value& d : v.at("devices", what).as_array("identity.devices")) {
        id.device_kinds.emplace_back(d.at("name", "identity.devices").as_string("device name"),
                                     d.at("memory", "identity.devices").as_uint("device memory"));
    }
    id.first_time_ns = v.at("first_time_ns", what).as_int("identity.first_time_ns");
    id.last_time_ns = v.at("last_time_ns", what).as_int("identity.last_time_ns");
    return id;
}

summary_peak read_peak(const json_value& v, const std::string& what) {
    return {v.at("bytes", what).as_uint(what + ".bytes"),
            v.at("position", what).as_uint(what + ".position"),
            v.at("time_ns", what).as_int(what + ".time_ns"),
            v.at("step", what).as_uint(what + ".step"),
            v.at("annotation", what).as_string(what + ".annotation")};
}

std::optional<uint64_t> read_optional(const json_value& v, const std::string& what) {
    if (v.kind == json_value::type::null) {
        return std::nullopt;
    }
    return v.as_uint(what);
}

std::vector<summary_oom> read_ooms(const json_value& v) {
    std::vector<summary_oom> out;
    for (const json_value& o : v.as_array("ooms")) {
        summary_oom oom;
        oom.entry = o.at("entry", "ooms").as_uint("ooms.entry");
        oom.time_ns = o.at("time_ns", "ooms").as_int("ooms.time_ns");
        oom.requested = o.at("requested", "ooms").as_uint("ooms.requested");
        oom.verdict = o.at("verdict", "ooms").as_string("ooms.verdict");
        oom.explanation = o.at("explanation", "ooms").as_string("ooms.explanation");
        oom.outside_allocator =
            read_optional(o.at("outside_allocator", "ooms"), "ooms.outside_allocator");
        oom.categories = read_categories(o.at("categories", "ooms"), "ooms.categories");
        out.push_back(std::move(oom));
    }
    return out;
}

std::vector<summary_stack> read_stacks(const json_value& v) {
    std::vector<summary_stack> out;
    for (const json_value& s : v.as_array("top_stacks")) {
        summary_stack stack;
        stack.hash = from_hex(s.at("hash", "top_stacks"), "top_stacks.hash");
        stack.bytes = s.at("bytes", "top_stacks").as_uint("top_stacks.bytes");
        stack.blocks = s.at("blocks", "top_stacks").as_uint("top_stacks.blocks");
        const std::string& category = s.at("category", "top_stacks").as_string("category");
        if (!parse_category(category, stack.category)) {
            throw json_error("top_stacks.category: '" + category + "' is no category");
        }
        for (const json_value& f : s.at("frames", "top_stacks").as_array("top_stacks.frames")) {
            stack.frames.push_back(f.as_string("top_stacks.frames"));
        }
        out.push_back(std::move(stack));
    }
    return out;
}

std::vector<curve_point> read_curve(const json_value& v) {
    const auto& positions = v.at("positions", "curve").as_array("curve.positions");
    const auto& allocated = v.at("allocated", "curve").as_array("curve.allocated");
    const auto& reserved = v.at("reserved", "curve").as_array("curve.reserved");
    if (allocated.size() != positions.size() || reserved.size() != positions.size()) {
        throw json_error("curve: positions, allocated and reserved differ in length");
    }
    std::vector<curve_point> out;
    for (size_t i = 0; i < positions.size(); ++i) {
        out.push_back({positions[i].as_uint("curve.positions"),
                       allocated[i].as_uint("curve.allocated"),
                       reserved[i].as_uint("curve.reserved")});
    }
    return out;
}

void read_body(const json_value& v, rank_summary& s) {
    constexpr std::string_view what = "the summary";
    s.path = v.at("path", what).as_string("path");
    s.file_kind = v.at("file_kind", what).as_string("file_kind");
    s.identity = read_identity(v.at("identity", what));
    s.entries = v.at("entries", what).as_uint("entries");
    s.dropped = v.at("dropped", what).as_uint("dropped");
    s.peak_allocated = read_peak(v.at("peak_allocated", what), "peak_allocated");
    s.peak_reserved = read_peak(v.at("peak_reserved", what), "peak_reserved");
    s.end_allocated = v.at("end_allocated", what).as_uint("end_allocated");
    s.end_reserved = v.at("end_reserved", what).as_uint("end_reserved");
    s.allocations = v.at("allocations", what).as_int("allocations");
    s.device_allocations = v.at("device_allocations", what).as_int("device_allocations");
    s.oom_count = v.at("oom_count", what).as_int("oom_count");
    s.job_kind = v.at("job_kind", what).as_string("job_kind");
    s.step_source = v.at("step_source", what).as_string("step_source");
    s.steps = v.at("steps", what).as_uint("steps");
    s.categories_at_peak = read_categories(v.at("categories_at_peak", what), "categories_at_peak");
    const json_value& f = v.at("fragmentation_at_peak_reserved", what);
    s.free_at_peak_reserved = f.at("free", "fragmentation").as_uint("fragmentation.free");
    s.largest_free_at_peak_reserved =
        f.at("largest_free", "fragmentation").as_uint("fragmentation.largest_free");
    s.fragmentation_at_peak_reserved =
        f.at("fragmentation", "fragmentation").as_double("fragmentation.fragmentation");
    s.ooms = read_ooms(v.at("ooms", what));
    s.outside_allocator = read_optional(v.at("outside_allocator", what), "outside_allocator");
    const std::string& frames = v.at("stack_frames", what).as_string("stack_frames");
    if (frames != "all" && frames != "folded") {
        throw json_error("stack_frames: expected folded or all, got '" + frames + "'");
    }
    s.all_frames = frames == "all";
    s.top_stacks = read_stacks(v.at("top_stacks", what));
    s.unstacked_at_peak = v.at("unstacked_at_peak", what).as_uint("unstacked_at_peak");
    for (const json_value& h : v.at("stack_sketch", what).as_array("stack_sketch")) {
        s.stack_sketch.push_back(from_hex(h, "stack_sketch"));
    }
    s.sequence_hash = from_hex(v.at("sequence_hash", what), "sequence_hash");
    for (const json_value& c : v.at("sequence", what).as_array("sequence")) {
        s.sequence.push_back({c.at("first_entry", "sequence").as_uint("sequence.first_entry"),
                              c.at("first_step", "sequence").as_uint("sequence.first_step"),
                              from_hex(c.at("hash", "sequence"), "sequence.hash")});
    }
    s.curve = read_curve(v.at("curve", what));
}

}  // namespace

rank_summary read_summary_json(std::string_view text) {
    const json_value v = parse_json(text);
    constexpr std::string_view what = "the summary";
    if (v.kind != json_value::type::object) {
        throw json_error("expected a JSON object, a rank summary");
    }
    const std::string& format = v.at("format", what).as_string("format");
    if (format != summary_format_name) {
        throw json_error("format: expected '" + std::string(summary_format_name) + "', got '" +
                         format + "'");
    }
    rank_summary s;
    s.version = static_cast<int>(v.at("version", what).as_int("version"));
    if (s.version > rank_summary_version || s.version < 1) {
        throw json_error("version " + std::to_string(s.version) + ": this memtrail reads " +
                         "rank summaries of version 1 to " + std::to_string(rank_summary_version));
    }
    read_body(v, s);
    return s;
}

bool looks_like_summary(std::string_view text) {
    for (const char c : text) {
        if (c == ' ' || c == '\n' || c == '\r' || c == '\t') {
            continue;
        }
        return c == '{';
    }
    return false;
}

rank_summary read_summary_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) {
        throw snapshot::load_error(path + ": cannot open");
    }
    std::ostringstream buffer;
    buffer << in.rdbuf();
    try {
        return read_summary_json(std::move(buffer).str());
    } catch (const snapshot::json_error& e) {
        throw snapshot::load_error(path + ": not a rank summary (docs/ranks.md): " + e.what());
    }
}

}  // namespace memtrail::analysis
