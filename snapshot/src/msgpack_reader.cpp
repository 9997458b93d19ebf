// Decodes docs/snapshot-format.md into the snapshot model. Everything read is checked: lengths
// against the bytes left (msgpack_cursor), ids against the tables already read, enums against
// their ranges; a table entry that interns to an earlier id is a duplicate and refused, so ids in
// the file and in the model always agree.

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "file_io.hpp"
#include "memtrail/snapshot/format_error.hpp"
#include "memtrail/snapshot/msgpack_format.hpp"
#include "msgpack_cursor.hpp"
#include "msgpack_schema.hpp"
#include "zstd_codec.hpp"

namespace memtrail::snapshot {

namespace {

using namespace detail;

// What a zstd file can honestly describe, per compressed byte: real snapshots hold about 0.1
// trace entries per compressed byte (its expansion: zstd_decompress_bounded). Past this the file
// is a decompression bomb (1,900 bytes of zeros can claim 60M entries). The slack keeps small
// files of any shape readable. docs/snapshot-format.md states the same numbers.
constexpr size_t zstd_entries_per_byte = 8;
constexpr size_t zstd_entries_slack = size_t{1} << 20;

constexpr std::array<std::string_view, 9> section_names = {
    section::header, section::settings, section::stats,  section::strings,     section::frames,
    section::stacks, section::segments, section::traces, section::annotations,
};

class snapshot_reader {
  public:
    // `entry_budget` bounds the trace entries of all traces together; a plain file needs none
    // (every entry costs a byte of it), a zstd file's is set by its compressed size.
    snapshot_reader(std::span<const uint8_t> bytes, size_t entry_budget)
        : in_(bytes), entry_budget_(entry_budget) {}

    snapshot read(std::span<const uint8_t> bytes) {
        if (bytes.size() < file_magic.size() ||
            std::memcmp(bytes.data(), file_magic.data(), file_magic.size()) != 0) {
            throw format_error(
                "memtrail snapshot: missing \"MEMTRAIL\" magic at byte 0: not a memtrail "
                "snapshot");
        }
        in_ = msgpack_cursor(bytes, file_magic.size());
        const size_t version_offset = in_.offset();
        const uint64_t version = in_.read_uint("the format version");
        if (version == 0 || version > current_format_version) {
            in_.fail(version_offset, "the format version",
                     "version " + std::to_string(version) + " is not supported (this reader " +
                         "knows 1 to " + std::to_string(current_format_version) + ")");
        }
        out_.info.format_version = static_cast<uint32_t>(version);

        std::array<bool, section_names.size()> seen{};
        for (uint32_t n = in_.read_map("the body"); n > 0; --n) {
            const size_t key_offset = in_.offset();
            const auto name = in_.read_string("a section name");
            size_t index = 0;
            while (index < section_names.size() && section_names[index] != name) {
                ++index;
            }
            if (index == section_names.size()) {
                in_.skip("an unknown section");  // from a newer writer
                continue;
            }
            if (seen[index]) {
                in_.fail(key_offset, "section '" + std::string(name) + "'", "appears twice");
            }
            seen[index] = true;
            read_section(name);
        }
        if (!in_.at_end()) {
            in_.fail(in_.offset(), "the end of the body",
                     std::to_string(in_.left()) + " unexpected bytes follow");
        }
        return std::move(out_);
    }

  private:
    void read_section(std::string_view name) {
        if (name == section::header) {
            read_header();
        } else if (name == section::settings) {
            read_settings();
        } else if (name == section::stats) {
            read_stats();
        } else if (name == section::strings) {
            read_strings();
        } else if (name == section::frames) {
            read_frames();
        } else if (name == section::stacks) {
            read_stacks();
        } else if (name == section::segments) {
            read_segments();
        } else if (name == section::traces) {
            read_traces();
        } else {
            read_annotations();
        }
    }

    // --- checked scalars ---------------------------------------------------------------------

    int8_t read_device(std::string_view what) {
        const size_t at = in_.offset();
        const int64_t d = in_.read_int(what);
        if (d < INT8_MIN || d > INT8_MAX) {
            in_.fail(at, what, "device " + std::to_string(d) + " does not fit int8");
        }
        return static_cast<int8_t>(d);
    }

    int32_t read_int32(std::string_view what) {
        const size_t at = in_.offset();
        const int64_t v = in_.read_int(what);
        if (v < INT32_MIN || v > INT32_MAX) {
            in_.fail(at, what, std::to_string(v) + " does not fit int32");
        }
        return static_cast<int32_t>(v);
    }

    uint32_t read_uint32(std::string_view what) {
        const size_t at = in_.offset();
        const uint64_t v = in_.read_uint(what);
        if (v > UINT32_MAX) {
            in_.fail(at, what, std::to_string(v) + " does not fit uint32");
        }
        return static_cast<uint32_t>(v);
    }

    uint32_t check_id(uint64_t id, size_t table_size, const char* table, size_t at,
                      std::string_view what) const {
        if (id >= table_size) {
            in_.fail(at, what,
                     std::string(table) + " id " + std::to_string(id) + " is out of range (" +
                         std::to_string(table_size) + " " + table +
                         "s; the table must come before its users)");
        }
        return static_cast<uint32_t>(id);
    }
    string_id read_string_id(std::string_view what) {
        const size_t at = in_.offset();
        return check_id(in_.read_uint(what), out_.strings().size(), "string", at, what);
    }
    stack_id read_stack_id(std::string_view what) {
        const size_t at = in_.offset();
        return check_id(in_.read_uint(what), out_.stacks().size(), "stack", at, what);
    }

    // Opens a row and returns how many fields beyond `fields` to skip at its end.
    uint32_t open_row(size_t fields, std::string_view what) {
        const size_t at = in_.offset();
        const uint32_t n = in_.read_array(what);
        if (n < fields) {
            in_.fail(
                at, what,
                "row has " + std::to_string(n) + " fields, expected " + std::to_string(fields));
        }
        return n - static_cast<uint32_t>(fields);
    }
    void close_row(uint32_t extra, std::string_view what) {
        for (; extra > 0; --extra) {
            in_.skip(what);
        }
    }

    // --- sections ----------------------------------------------------------------------------

    void read_header() {
        header& h = out_.info;
        for (uint32_t n = in_.read_map("the header"); n > 0; --n) {
            const auto key = in_.read_string("a header key");
            if (key == "producer") {
                h.producer = in_.read_string("header 'producer'");
            } else if (key == "host") {
                h.host = in_.read_string("header 'host'");
            } else if (key == "pid") {
                h.pid = in_.read_int("header 'pid'");
            } else if (key == "time_ns") {
                h.time_ns = in_.read_int("header 'time_ns'");
            } else if (key == "devices") {
                for (uint32_t d = in_.read_array("header 'devices'"); d > 0; --d) {
                    h.devices.push_back(read_device_properties());
                }
            } else if (key == "job") {
                read_job(h.job);
            } else {
                in_.skip("an unknown header key");
            }
        }
    }

    void read_job(job_identity& job) {
        static constexpr std::string_view what = "header 'job'";
        for (uint32_t n = in_.read_map(what); n > 0; --n) {
            const auto key = in_.read_string(what);
            if (key == "id") {
                job.job_id = in_.read_string(what);
            } else if (key == "rank") {
                job.rank = read_int32(what);
            } else if (key == "local_rank") {
                job.local_rank = read_int32(what);
            } else if (key == "world_size") {
                job.world_size = read_int32(what);
            } else {
                in_.skip(what);
            }
        }
    }

    device_properties read_device_properties() {
        static constexpr std::string_view what = "device properties";
        device_properties d;
        for (uint32_t n = in_.read_map(what); n > 0; --n) {
            const auto key = in_.read_string(what);
            if (key == "device") {
                d.device = read_device(what);
            } else if (key == "name") {
                d.name = in_.read_string(what);
            } else if (key == "total_memory") {
                d.total_memory = in_.read_uint(what);
            } else if (key == "major") {
                d.major = read_int32(what);
            } else if (key == "minor") {
                d.minor = read_int32(what);
            } else if (key == "multiprocessor_count") {
                d.multiprocessor_count = read_int32(what);
            } else {
                in_.skip(what);
            }
        }
        return d;
    }

    void read_settings() {
        static constexpr std::string_view what = "allocator settings";
        allocator_settings& st = out_.settings;
        for (uint32_t n = in_.read_map(what); n > 0; --n) {
            const auto key = in_.read_string(what);
            if (key == "conf") {
                st.conf = in_.read_string("setting 'conf'");
            } else if (key == "max_split_size") {
                st.max_split_size = in_.read_int("setting 'max_split_size'");
            } else if (key == "max_non_split_rounding_size") {
                st.max_non_split_rounding_size =
                    in_.read_uint("setting 'max_non_split_rounding_size'");
            } else if (key == "garbage_collection_threshold") {
                st.garbage_collection_threshold =
                    in_.read_double("setting 'garbage_collection_threshold'");
            } else if (key == "expandable_segments") {
                st.expandable_segments = in_.read_bool("setting 'expandable_segments'");
            } else if (key == "roundup_power2_divisions") {
                const size_t at = in_.offset();
                const uint32_t count = in_.read_array("setting 'roundup_power2_divisions'");
                if (count > 64) {
                    in_.fail(at, "setting 'roundup_power2_divisions'",
                             std::to_string(count) + " divisions, at most 64");
                }
                st.roundup_power2_divisions.assign(count, 0);
                for (uint64_t& d : st.roundup_power2_divisions) {
                    d = in_.read_uint("setting 'roundup_power2_divisions'");
                }
            } else if (key == "other") {
                for (uint32_t o = in_.read_map("setting 'other'"); o > 0; --o) {
                    const auto name = in_.read_string("setting 'other'");
                    st.other[std::string(name)] = in_.read_string("setting 'other'");
                }
            } else {
                in_.skip(what);
            }
        }
    }

    void read_stats() {
        static constexpr std::string_view what = "statistics";
        for (uint32_t n = in_.read_map(what); n > 0; --n) {
            const int32_t device = read_int32("statistics device");
            statistics& counters = out_.stats[device];
            for (uint32_t c = in_.read_map(what); c > 0; --c) {
                const auto name = in_.read_string("a statistic's name");
                counters[std::string(name)] = in_.read_int("a statistic's value");
            }
        }
    }

    void read_strings() {
        static constexpr std::string_view what = "the string table";
        const uint32_t count = in_.read_array(what);
        for (uint32_t i = 0; i < count; ++i) {
            const size_t at = in_.offset();
            const auto text = in_.read_string(what);
            if (out_.intern_string(text) != i + 1) {
                in_.fail(at, what, "string " + std::to_string(i + 1) + " repeats an earlier one");
            }
        }
    }

    void read_frames() {
        static constexpr std::string_view what = "a frame";
        const uint32_t count = in_.read_array("the frame table");
        for (uint32_t i = 0; i < count; ++i) {
            const size_t at = in_.offset();
            const uint32_t extra = open_row(frame_row_fields, what);
            frame f;
            const size_t kind_at = in_.offset();
            const uint64_t kind = in_.read_uint(what);
            if (kind > static_cast<uint64_t>(frame_kind::python)) {
                in_.fail(kind_at, what, "frame kind " + std::to_string(kind) + " is unknown");
            }
            f.kind = static_cast<frame_kind>(kind);
            f.function = read_string_id(what);
            f.filename = read_string_id(what);
            f.line = read_uint32(what);
            f.module = read_string_id(what);
            f.module_offset = in_.read_uint(what);
            f.build_id = read_string_id(what);
            close_row(extra, what);
            if (out_.intern_frame(f) != i + 1) {
                in_.fail(at, what, "frame " + std::to_string(i + 1) + " repeats an earlier one");
            }
        }
    }

    void read_stacks() {
        static constexpr std::string_view what = "a stack";
        const uint32_t count = in_.read_array("the stack table");
        std::vector<frame_id> frames;
        for (uint32_t i = 0; i < count; ++i) {
            const size_t at = in_.offset();
            frames.resize(in_.read_array(what));
            for (frame_id& f : frames) {
                const size_t id_at = in_.offset();
                f = check_id(in_.read_uint(what), out_.frames().size(), "frame", id_at, what);
            }
            if (out_.intern_stack(frames) != i + 1) {
                in_.fail(at, what, "stack " + std::to_string(i + 1) + " repeats an earlier one");
            }
        }
    }

    void read_segments() {
        static constexpr std::string_view what = "a segment";
        const uint32_t count = in_.read_array("the segment list");
        out_.segments.reserve(count);
        for (uint32_t i = 0; i < count; ++i) {
            const uint32_t extra = open_row(segment_row_fields, what);
            segment seg;
            seg.device = read_device(what);
            seg.address = in_.read_uint(what);
            seg.total_size = in_.read_uint(what);
            seg.allocated_size = in_.read_uint(what);
            seg.active_size = in_.read_uint(what);
            seg.requested_size = in_.read_uint(what);
            seg.stream = in_.read_uint(what);
            const uint64_t flags = in_.read_uint(what);
            seg.is_large = (flags & segment_flag_large) != 0;
            seg.is_expandable = (flags & segment_flag_expandable) != 0;
            seg.pool_id_first = in_.read_uint(what);
            seg.pool_id_second = in_.read_uint(what);
            seg.stack = read_stack_id(what);
            seg.time_ns = in_.read_int(what);
            const uint32_t blocks = in_.read_array("a segment's blocks");
            seg.blocks.reserve(blocks);
            for (uint32_t b = 0; b < blocks; ++b) {
                seg.blocks.push_back(read_block(seg.address));
            }
            close_row(extra, what);
            out_.segments.push_back(std::move(seg));
        }
    }

    block read_block(uint64_t segment_address) {
        static constexpr std::string_view what = "a block";
        const uint32_t extra = open_row(block_row_fields, what);
        block b;
        b.address = segment_address + in_.read_uint(what);
        b.size = in_.read_uint(what);
        b.requested_size = in_.read_uint(what);
        const size_t state_at = in_.offset();
        const uint64_t state = in_.read_uint(what);
        if (state > static_cast<uint64_t>(block_state::inactive)) {
            in_.fail(state_at, what, "block state " + std::to_string(state) + " is unknown");
        }
        b.state = static_cast<block_state>(state);
        b.stack = read_stack_id(what);
        b.time_ns = in_.read_int(what);
        close_row(extra, what);
        return b;
    }

    void read_traces() {
        for (uint32_t n = in_.read_array("the trace list"); n > 0; --n) {
            read_trace();
        }
    }

    void read_trace() {
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

    // Which entry field a trace column fills.
    enum class column_field : uint8_t {
        kind,
        device,
        address,
        size,
        requested_size,
        stream,
        thread,
        time_ns,
        stack,
        user_metadata,
        compile_context,
        name,
    };

    // The field of a column after the first; 'kind' again is an unknown column, skipped.
    static bool find_column_field(std::string_view name, column_field& field) {
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

    // A column is an array with one value per entry, or a single value shared by all entries.
    // It is decoded a run of entries at a time: where its next value is, and for a delta column
    // the running sum.
    struct trace_column {
        column_field field = column_field::kind;
        std::string what;
        msgpack_cursor values;
        bool per_entry = true;
        uint64_t running = 0;
    };

    // Entries are filled a run at a time, every column in turn, so that the run stays in cache:
    // a pass per column over a long trace costs more in memory traffic than the decoding.
    static constexpr size_t run_length = 4096;

    template <class Read, class Assign>
    static void fill(const trace_column& col, std::span<trace_entry> run, Read&& read,
                     Assign&& assign) {
        if (col.per_entry) {
            for (auto& e : run) {
                assign(e, read());
            }
        } else {
            const auto value = read();
            for (auto& e : run) {
                assign(e, value);
            }
        }
    }

    // Decodes the next run of `col` into `run`, with the same checks and errors as any value.
    void decode_run(trace_column& col, std::span<trace_entry> run,
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

    // First checks every column in file order (so errors are the same as reading them one by
    // one), then fills the entries a run at a time.
    void read_columns(device_trace& trace, const std::vector<uint64_t>& streams) {
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

    void charge_entries(size_t count, size_t at, std::string_view what) {
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

    void read_annotations() {
        static constexpr std::string_view what = "an annotation";
        const uint32_t count = in_.read_array("the annotation list");
        out_.annotations.reserve(count);
        for (uint32_t i = 0; i < count; ++i) {
            const uint32_t extra = open_row(annotation_row_fields, what);
            annotation a;
            a.is_start = in_.read_bool(what);
            a.name = read_string_id(what);
            a.device = read_device(what);
            a.time_ns = in_.read_int(what);
            close_row(extra, what);
            out_.annotations.push_back(a);
        }
    }

    msgpack_cursor in_;
    size_t entry_budget_;
    snapshot out_;
};

}  // namespace

bool looks_like_snapshot(std::span<const uint8_t> bytes) {
    return has_zstd_magic(bytes) ||
           (bytes.size() >= file_magic.size() &&
            std::memcmp(bytes.data(), file_magic.data(), file_magic.size()) == 0);
}

snapshot read_snapshot(std::span<const uint8_t> bytes) {
    if (has_zstd_magic(bytes)) {
        const auto plain = zstd_decompress_bounded(bytes);
        return snapshot_reader(plain, zstd_entries_per_byte * bytes.size() + zstd_entries_slack)
            .read(plain);
    }
    return snapshot_reader(bytes, SIZE_MAX).read(bytes);
}

snapshot read_snapshot(const std::filesystem::path& path) {
    const auto bytes = read_whole_file(path);
    return read_snapshot(std::span<const uint8_t>(bytes));
}

}  // namespace memtrail::snapshot
