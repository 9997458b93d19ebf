// Reads a trace of a memtrail snapshot: its keys, then its columns, checked column by column in
// file order and decoded into the entries a run at a time (docs/snapshot-format.md, "traces").

#include <array>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "detail/msgpack_reader.hpp"
#include "memtrail/snapshot/format_error.hpp"
#include "memtrail/snapshot/msgpack_format.hpp"

namespace memtrail::snapshot::detail {

void snapshot_reader::read_traces() {
    for (uint32_t n = in_.read_array("the trace list"); n > 0; --n) {
        read_trace();
    }
}

void snapshot_reader::read_trace() {
    static constexpr std::string_view what = "a trace";
    const size_t at = in_.offset();
    const uint32_t keys = in_.read_map(what);
    device_trace trace;
    std::vector<uint64_t> streams;
    for (uint32_t k = 0; k < keys; ++k) {
        const auto key = in_.read_string("a trace key");
        if (key == "device") {
            trace.device = read_device("trace 'device'");
        } else if (key == "dropped") {
            trace.dropped = in_.read_uint("trace 'dropped'");
        } else if (key == "streams") {
            streams.resize(in_.read_array("trace 'streams'"));
            for (uint64_t& s : streams) {
                s = in_.read_uint("trace 'streams'");
            }
        } else if (key == "columns") {
            read_columns(trace, streams);
        } else {
            in_.skip("an unknown trace key");
        }
    }
    if (out_.find_trace(trace.device) != nullptr) {
        in_.fail(at, what, "a second trace for device " + std::to_string(trace.device));
    }
    out_.traces.push_back(std::move(trace));
}

bool snapshot_reader::find_column_field(std::string_view name, column_field& field) {
    static constexpr std::array<std::pair<std::string_view, column_field>, 11> fields = {{
        {column::device, column_field::device},
        {column::address, column_field::address},
        {column::size, column_field::size},
        {column::requested_size, column_field::requested_size},
        {column::stream, column_field::stream},
        {column::thread, column_field::thread},
        {column::time_ns, column_field::time_ns},
        {column::stack, column_field::stack},
        {column::user_metadata, column_field::user_metadata},
        {column::compile_context, column_field::compile_context},
        {column::name, column_field::name},
    }};
    for (const auto& [known, value] : fields) {
        if (known == name) {
            field = value;
            return true;
        }
    }
    return false;
}

void snapshot_reader::decode_run(trace_column& col, std::span<trace_entry> run,
                                 const std::vector<uint64_t>& streams) {
    // The checked readers work on in_: point it at the column for the run.
    const msgpack_cursor outside = in_;
    in_ = col.values;
    const std::string_view what = col.what;
    const auto read_uint = [&] { return in_.read_uint(what); };
    const auto read_int = [&] { return in_.read_int(what); };
    const auto checked = [&](size_t limit, const char* table) {
        return [&, limit, table] {
            const size_t at = in_.offset();
            return check_id(in_.read_uint(what), limit, table, at, what);
        };
    };
    switch (col.field) {
        case column_field::kind:
            fill(
                col, run,
                [&] {
                    const size_t at = in_.offset();
                    const uint64_t kind = in_.read_uint(what);
                    if (kind >= action_count) {
                        in_.fail(at, what, "action " + std::to_string(kind) + " is unknown");
                    }
                    return static_cast<action>(kind);
                },
                [](trace_entry& e, action v) { e.kind = v; });
            break;
        case column_field::device:
            fill(
                col, run, [&] { return read_device(what); },
                [](trace_entry& e, int8_t v) { e.device = v; });
            break;
        case column_field::address:
            fill(col, run, read_int, [&](trace_entry& e, int64_t delta) {
                col.running += static_cast<uint64_t>(delta);
                e.address = col.running;
            });
            break;
        case column_field::size:
            fill(col, run, read_uint, [](trace_entry& e, uint64_t v) { e.size = v; });
            break;
        case column_field::requested_size:
            // Relative to what the kind implies; made absolute once all columns are in.
            fill(col, run, read_int, [](trace_entry& e, int64_t delta) {
                e.requested_size = static_cast<uint64_t>(delta);
            });
            break;
        case column_field::stream:
            fill(col, run, checked(streams.size(), "stream"),
                 [&](trace_entry& e, uint32_t index) { e.stream = streams[index]; });
            break;
        case column_field::thread:
            fill(
                col, run, [&] { return read_uint32(what); },
                [](trace_entry& e, uint32_t v) { e.thread = v; });
            break;
        case column_field::time_ns:
            fill(col, run, read_int, [&](trace_entry& e, int64_t delta) {
                col.running += static_cast<uint64_t>(delta);
                e.time_ns = static_cast<int64_t>(col.running);
            });
            break;
        case column_field::stack:
            fill(col, run, checked(out_.stacks().size(), "stack"),
                 [](trace_entry& e, uint32_t v) { e.stack = v; });
            break;
        case column_field::user_metadata:
            fill(col, run, checked(out_.strings().size(), "string"),
                 [](trace_entry& e, uint32_t v) { e.user_metadata = v; });
            break;
        case column_field::compile_context:
            fill(col, run, checked(out_.strings().size(), "string"),
                 [](trace_entry& e, uint32_t v) { e.compile_context = v; });
            break;
        case column_field::name:
            fill(col, run, checked(out_.strings().size(), "string"),
                 [](trace_entry& e, uint32_t v) { e.name = v; });
            break;
    }
    if (col.per_entry) {
        col.values = in_;
    }
    in_ = outside;
}

void snapshot_reader::read_columns(device_trace& trace, const std::vector<uint64_t>& streams) {
    auto& entries = trace.entries;
    const size_t columns_at = in_.offset();
    const uint32_t columns = in_.read_map("trace 'columns'");
    std::vector<trace_column> known;
    std::vector<trace_entry> scratch;
    size_t count = 0;
    for (uint32_t c = 0; c < columns; ++c) {
        const size_t name_at = in_.offset();
        const auto name = in_.read_string("a trace column's name");
        trace_column col{.what = "trace column '" + std::string(name) + "'", .values = in_};
        if (c == 0) {
            // The entry count comes from this array: every entry costs a byte of input.
            if (name != column::kind || !in_.next_is_array()) {
                in_.fail(name_at, col.what, "the first column must be 'kind', as an array");
            }
            const size_t count_at = in_.offset();
            count = in_.read_array(col.what);
            charge_entries(count, count_at, col.what);
            // A second 'columns' key refills the entries it had, as one pass per column did.
            if (count < entries.size()) {
                entries.resize(count);
            }
            entries.reserve(count);
            scratch.resize(std::min(count, run_length));
        } else if (!find_column_field(name, col.field)) {
            in_.skip(col.what);
            continue;
        } else if (in_.next_is_array()) {
            const size_t at = in_.offset();
            const uint32_t values = in_.read_array(col.what);
            if (values != count) {
                in_.fail(at, col.what,
                         "column has " + std::to_string(values) + " values for " +
                             std::to_string(count) + " entries");
            }
        } else {
            col.per_entry = false;
        }
        col.values = in_;
        // The check: decode it all into scratch, then step past it.
        trace_column probe = col;
        if (probe.per_entry) {
            for (size_t done = 0; done < count; done += run_length) {
                decode_run(probe, std::span(scratch).first(std::min(run_length, count - done)),
                           streams);
            }
        } else {
            trace_entry single;
            probe.per_entry = true;
            decode_run(probe, std::span(&single, 1), streams);
        }
        in_ = probe.values;
        known.push_back(std::move(col));
    }
    if (columns == 0 && !entries.empty()) {
        in_.fail(columns_at, "trace 'columns'", "no columns");
    }
    for (size_t first = 0; first < count; first += run_length) {
        const size_t last = std::min(count, first + run_length);
        if (entries.size() < last) {
            entries.resize(last);
        }
        const std::span run(entries.data() + first, last - first);
        for (trace_column& col : known) {
            decode_run(col, run, streams);
        }
        for (auto& e : run) {
            if (kind_requests_size(static_cast<uint8_t>(e.kind))) {
                e.requested_size += e.size;
            }
        }
    }
}

void snapshot_reader::charge_entries(size_t count, size_t at, std::string_view what) {
    if (count > entry_budget_) {
        in_.fail(at, what,
                 std::to_string(count) + " entries, more than the " +
                     std::to_string(entry_budget_) +
                     " left of what a zstd file of this size can hold (" +
                     std::to_string(zstd_entries_per_byte) + " per compressed byte plus " +
                     std::to_string(zstd_entries_slack) +
                     " in all traces); refused as a decompression bomb");
    }
    entry_budget_ -= count;
}

}  // namespace memtrail::snapshot::detail
