// Decodes docs/snapshot-format.md into the snapshot model. Everything read is checked: lengths
// against the bytes left (msgpack_cursor), ids against the tables already read, enums against
// their ranges; a table entry that interns to an earlier id is a duplicate and refused, so ids in
// the file and in the model always agree. The traces' columns are read in
// msgpack_trace_reader.cpp.

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "detail/file_io.hpp"
#include "detail/msgpack_outside_memory.hpp"
#include "detail/msgpack_reader.hpp"
#include "detail/zstd_codec.hpp"
#include "memtrail/snapshot/format_error.hpp"
#include "memtrail/snapshot/msgpack_format.hpp"

namespace memtrail::snapshot {

namespace detail {

namespace {

constexpr std::array<std::string_view, 10> section_names = {
    section::header,      section::settings,       section::stats,    section::strings,
    section::frames,      section::stacks,         section::segments, section::traces,
    section::annotations, section::outside_memory,
};

}  // namespace

snapshot snapshot_reader::read(std::span<const uint8_t> bytes) {
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

void snapshot_reader::read_section(std::string_view name) {
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
    } else if (name == section::outside_memory) {
        read_outside_memory(in_, out_);
    } else {
        read_annotations();
    }
}

void snapshot_reader::read_header() {
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

void snapshot_reader::read_job(job_identity& job) {
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

device_properties snapshot_reader::read_device_properties() {
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

void snapshot_reader::read_settings() {
    static constexpr std::string_view what = "allocator settings";
    allocator_settings& st = out_.settings;
    for (uint32_t n = in_.read_map(what); n > 0; --n) {
        const auto key = in_.read_string(what);
        if (key == "conf") {
            st.conf = in_.read_string("setting 'conf'");
        } else if (key == "max_split_size") {
            st.max_split_size = in_.read_int("setting 'max_split_size'");
        } else if (key == "max_non_split_rounding_size") {
            st.max_non_split_rounding_size = in_.read_uint("setting 'max_non_split_rounding_size'");
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

void snapshot_reader::read_stats() {
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

void snapshot_reader::read_strings() {
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

void snapshot_reader::read_frames() {
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

void snapshot_reader::read_stacks() {
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

void snapshot_reader::read_segments() {
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

block snapshot_reader::read_block(uint64_t segment_address) {
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

void snapshot_reader::read_annotations() {
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

}  // namespace detail

using namespace detail;

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
