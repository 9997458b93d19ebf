#pragma once
// The reader of memtrail's msgpack snapshots (docs/snapshot-format.md): the file's sections in
// msgpack_reader.cpp, its traces' columns in msgpack_trace_reader.cpp.

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "memtrail/snapshot/model.hpp"
#include "msgpack_cursor.hpp"
#include "msgpack_schema.hpp"

namespace memtrail::snapshot::detail {

// What a zstd file can honestly describe, per compressed byte: real snapshots hold about 0.1
// trace entries per compressed byte (its expansion: zstd_decompress_bounded). Past this the file
// is a decompression bomb (1,900 bytes of zeros can claim 60M entries). The slack keeps small
// files of any shape readable. docs/snapshot-format.md states the same numbers.
inline constexpr size_t zstd_entries_per_byte = 8;
inline constexpr size_t zstd_entries_slack = size_t{1} << 20;

class snapshot_reader {
  public:
    // `entry_budget` bounds the trace entries of all traces together; a plain file needs none
    // (every entry costs a byte of it), a zstd file's is set by its compressed size.
    snapshot_reader(std::span<const uint8_t> bytes, size_t entry_budget)
        : in_(bytes), entry_budget_(entry_budget) {}

    snapshot read(std::span<const uint8_t> bytes);

  private:
    void read_section(std::string_view name);

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

    void read_header();

    device_properties read_device_properties();

    void read_settings();

    void read_stats();

    void read_strings();

    void read_frames();

    void read_stacks();

    void read_segments();

    block read_block(uint64_t segment_address);

    void read_traces();

    void read_trace();

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
    static bool find_column_field(std::string_view name, column_field& field);

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
                    const std::vector<uint64_t>& streams);

    // First checks every column in file order (so errors are the same as reading them one by
    // one), then fills the entries a run at a time.
    void read_columns(device_trace& trace, const std::vector<uint64_t>& streams);

    void charge_entries(size_t count, size_t at, std::string_view what);

    void read_annotations();

    msgpack_cursor in_;
    size_t entry_budget_;
    snapshot out_;
};

}  // namespace memtrail::snapshot::detail
