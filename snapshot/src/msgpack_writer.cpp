// Encodes the snapshot model as docs/snapshot-format.md specifies. The trace is written one
// column at a time; a column whose values are all equal is written as that one value.

#include <msgpack/pack.hpp>

#include <bit>
#include <unordered_map>

#include "detail/file_io.hpp"
#include "detail/msgpack_schema.hpp"
#include "detail/zstd_codec.hpp"
#include "memtrail/snapshot/msgpack_format.hpp"
#include "memtrail/snapshot/output_file.hpp"

namespace memtrail::snapshot {

namespace {

using namespace detail;

// msgpack's packer writes into any object with write(const char*, size_t).
struct byte_sink {
    std::vector<uint8_t>* out;
    void write(const char* data, size_t size) {
        const auto* p = reinterpret_cast<const uint8_t*>(data);
        out->insert(out->end(), p, p + size);
    }
};

class snapshot_writer {
  public:
    explicit snapshot_writer(const snapshot& s) : s_(s), sink_{&out_}, pack_(sink_) {}

    std::vector<uint8_t> write() {
        sink_.write(file_magic.data(), file_magic.size());
        pack_.pack_uint32(current_format_version);
        pack_.pack_map(9);
        key(section::header);
        write_header();
        key(section::settings);
        write_settings();
        key(section::stats);
        write_stats();
        key(section::strings);
        write_strings();
        key(section::frames);
        write_frames();
        key(section::stacks);
        write_stacks();
        key(section::segments);
        write_segments();
        key(section::traces);
        write_traces();
        key(section::annotations);
        write_annotations();
        return std::move(out_);
    }

  private:
    void key(std::string_view k) { string(k); }
    void string(std::string_view v) {
        pack_.pack_str(static_cast<uint32_t>(v.size()));
        pack_.pack_str_body(v.data(), static_cast<uint32_t>(v.size()));
    }
    void boolean(bool v) { v ? pack_.pack_true() : pack_.pack_false(); }
    // Always float 64: msgpack-c's pack_double turns integral values into integers.
    void float64(double v) {
        const auto bits = std::bit_cast<uint64_t>(v);
        char encoded[9] = {static_cast<char>(0xcb)};
        for (int i = 0; i < 8; ++i) {
            encoded[1 + i] = static_cast<char>(bits >> (56 - 8 * i));
        }
        sink_.write(encoded, sizeof encoded);
    }

    void write_header() {
        const header& h = s_.info;
        pack_.pack_map(5);
        key("producer");
        string(h.producer);
        key("host");
        string(h.host);
        key("pid");
        pack_.pack_int64(h.pid);
        key("time_ns");
        pack_.pack_int64(h.time_ns);
        key("devices");
        pack_.pack_array(static_cast<uint32_t>(h.devices.size()));
        for (const device_properties& d : h.devices) {
            pack_.pack_map(6);
            key("device");
            pack_.pack_int64(d.device);
            key("name");
            string(d.name);
            key("total_memory");
            pack_.pack_uint64(d.total_memory);
            key("major");
            pack_.pack_int64(d.major);
            key("minor");
            pack_.pack_int64(d.minor);
            key("multiprocessor_count");
            pack_.pack_int64(d.multiprocessor_count);
        }
    }

    void write_settings() {
        const allocator_settings& st = s_.settings;
        pack_.pack_map(7);
        key("conf");
        string(st.conf);
        key("max_split_size");
        pack_.pack_int64(st.max_split_size);
        key("max_non_split_rounding_size");
        pack_.pack_uint64(st.max_non_split_rounding_size);
        key("garbage_collection_threshold");
        float64(st.garbage_collection_threshold);
        key("expandable_segments");
        boolean(st.expandable_segments);
        key("roundup_power2_divisions");
        pack_.pack_array(static_cast<uint32_t>(st.roundup_power2_divisions.size()));
        for (const uint64_t d : st.roundup_power2_divisions) {
            pack_.pack_uint64(d);
        }
        key("other");
        pack_.pack_map(static_cast<uint32_t>(st.other.size()));
        for (const auto& [name, value] : st.other) {
            string(name);
            string(value);
        }
    }

    void write_stats() {
        pack_.pack_map(static_cast<uint32_t>(s_.stats.size()));
        for (const auto& [device, counters] : s_.stats) {
            pack_.pack_int64(device);
            pack_.pack_map(static_cast<uint32_t>(counters.size()));
            for (const auto& [name, value] : counters) {
                string(name);
                pack_.pack_int64(value);
            }
        }
    }

    // Tables leave out id 0, which is implied.
    void write_strings() {
        const auto& strings = s_.strings();
        pack_.pack_array(static_cast<uint32_t>(strings.size() - 1));
        for (size_t i = 1; i < strings.size(); ++i) {
            string(strings[i]);
        }
    }

    void write_frames() {
        const auto& frames = s_.frames();
        pack_.pack_array(static_cast<uint32_t>(frames.size() - 1));
        for (size_t i = 1; i < frames.size(); ++i) {
            const frame& f = frames[i];
            pack_.pack_array(frame_row_fields);
            pack_.pack_uint8(static_cast<uint8_t>(f.kind));
            pack_.pack_uint32(f.function);
            pack_.pack_uint32(f.filename);
            pack_.pack_uint32(f.line);
            pack_.pack_uint32(f.module);
            pack_.pack_uint64(f.module_offset);
            pack_.pack_uint32(f.build_id);
        }
    }

    void write_stacks() {
        const auto& stacks = s_.stacks();
        pack_.pack_array(static_cast<uint32_t>(stacks.size() - 1));
        for (size_t i = 1; i < stacks.size(); ++i) {
            pack_.pack_array(static_cast<uint32_t>(stacks[i].size()));
            for (const frame_id f : stacks[i]) {
                pack_.pack_uint32(f);
            }
        }
    }

    void write_segments() {
        pack_.pack_array(static_cast<uint32_t>(s_.segments.size()));
        for (const segment& seg : s_.segments) {
            pack_.pack_array(segment_row_fields);
            pack_.pack_int64(seg.device);
            pack_.pack_uint64(seg.address);
            pack_.pack_uint64(seg.total_size);
            pack_.pack_uint64(seg.allocated_size);
            pack_.pack_uint64(seg.active_size);
            pack_.pack_uint64(seg.requested_size);
            pack_.pack_uint64(seg.stream);
            pack_.pack_uint64((seg.is_large ? segment_flag_large : 0) |
                              (seg.is_expandable ? segment_flag_expandable : 0));
            pack_.pack_uint64(seg.pool_id_first);
            pack_.pack_uint64(seg.pool_id_second);
            pack_.pack_uint32(seg.stack);
            pack_.pack_int64(seg.time_ns);
            pack_.pack_array(static_cast<uint32_t>(seg.blocks.size()));
            for (const block& b : seg.blocks) {
                pack_.pack_array(block_row_fields);
                // Blocks tile their segment: offsets are small. Wrapping keeps any model exact.
                pack_.pack_uint64(b.address - seg.address);
                pack_.pack_uint64(b.size);
                pack_.pack_uint64(b.requested_size);
                pack_.pack_uint8(static_cast<uint8_t>(b.state));
                pack_.pack_uint32(b.stack);
                pack_.pack_int64(b.time_ns);
            }
        }
    }

    // Writes one column: the single value when all entries agree, else an array.
    template <class T, class F>
    void column(std::string_view name, const std::vector<trace_entry>& entries, F&& value_of) {
        key(name);
        bool all_equal = true;
        const T first = entries.empty() ? T{} : value_of(0);
        for (size_t i = 1; i < entries.size() && all_equal; ++i) {
            all_equal = value_of(i) == first;
        }
        if (all_equal && !entries.empty()) {
            pack_value(first);
            return;
        }
        pack_.pack_array(static_cast<uint32_t>(entries.size()));
        for (size_t i = 0; i < entries.size(); ++i) {
            pack_value(value_of(i));
        }
    }
    void pack_value(uint64_t v) { pack_.pack_uint64(v); }
    void pack_value(int64_t v) { pack_.pack_int64(v); }

    void write_traces() {
        pack_.pack_array(static_cast<uint32_t>(s_.traces.size()));
        for (const device_trace& t : s_.traces) {
            const auto& e = t.entries;
            // Stream handles are large and few: entries refer to them by index, in order of first
            // use.
            std::vector<uint64_t> streams;
            std::vector<uint64_t> stream_index(e.size());
            std::unordered_map<uint64_t, uint64_t> index_of_stream;
            for (size_t i = 0; i < e.size(); ++i) {
                const auto [it, added] = index_of_stream.try_emplace(e[i].stream, streams.size());
                if (added) {
                    streams.push_back(e[i].stream);
                }
                stream_index[i] = it->second;
            }
            pack_.pack_map(4);
            key("device");
            pack_.pack_int64(t.device);
            key("dropped");
            pack_.pack_uint64(t.dropped);
            key("streams");
            pack_.pack_array(static_cast<uint32_t>(streams.size()));
            for (const uint64_t stream : streams) {
                pack_.pack_uint64(stream);
            }
            key("columns");
            pack_.pack_map(12);
            // Always an array, even when constant: its length is the entry count.
            key(column::kind);
            pack_.pack_array(static_cast<uint32_t>(e.size()));
            for (const trace_entry& entry : e) {
                pack_.pack_uint8(static_cast<uint8_t>(entry.kind));
            }
            column<int64_t>(column::device, e, [&](size_t i) { return int64_t{e[i].device}; });
            column<int64_t>(column::address, e, [&](size_t i) {
                const uint64_t previous = i == 0 ? 0 : e[i - 1].address;
                return static_cast<int64_t>(e[i].address - previous);
            });
            column<uint64_t>(column::size, e, [&](size_t i) { return e[i].size; });
            column<int64_t>(column::requested_size, e, [&](size_t i) {
                const uint64_t expected =
                    kind_requests_size(static_cast<uint8_t>(e[i].kind)) ? e[i].size : 0;
                return static_cast<int64_t>(e[i].requested_size - expected);
            });
            column<uint64_t>(column::stream, e, [&](size_t i) { return stream_index[i]; });
            column<uint64_t>(column::thread, e, [&](size_t i) { return uint64_t{e[i].thread}; });
            column<int64_t>(column::time_ns, e, [&](size_t i) {
                const uint64_t previous = i == 0 ? 0 : static_cast<uint64_t>(e[i - 1].time_ns);
                return static_cast<int64_t>(static_cast<uint64_t>(e[i].time_ns) - previous);
            });
            column<uint64_t>(column::stack, e, [&](size_t i) { return uint64_t{e[i].stack}; });
            column<uint64_t>(column::user_metadata, e,
                             [&](size_t i) { return uint64_t{e[i].user_metadata}; });
            column<uint64_t>(column::compile_context, e,
                             [&](size_t i) { return uint64_t{e[i].compile_context}; });
            column<uint64_t>(column::name, e, [&](size_t i) { return uint64_t{e[i].name}; });
        }
    }

    void write_annotations() {
        pack_.pack_array(static_cast<uint32_t>(s_.annotations.size()));
        for (const annotation& a : s_.annotations) {
            pack_.pack_array(annotation_row_fields);
            boolean(a.is_start);
            pack_.pack_uint32(a.name);
            pack_.pack_int64(a.device);
            pack_.pack_int64(a.time_ns);
        }
    }

    const snapshot& s_;
    std::vector<uint8_t> out_;
    byte_sink sink_;
    msgpack::packer<byte_sink> pack_;
};

bool ends_with_zst(const std::filesystem::path& path) {
    return path.extension() == ".zst";
}

}  // namespace

std::vector<uint8_t> write_snapshot(const snapshot& s, const write_options& options) {
    auto plain = snapshot_writer(s).write();
    if (options.compress == compression::zstd) {
        return zstd_compress(plain, options.zstd_level);
    }
    return plain;
}

void write_snapshot(const snapshot& s, const std::filesystem::path& path,
                    const write_options& options) {
    write_options resolved = options;
    if (resolved.compress == compression::automatic) {
        resolved.compress = ends_with_zst(path) ? compression::zstd : compression::none;
    }
    const auto bytes = write_snapshot(s, resolved);
    write_output_file(path, bytes);
}

}  // namespace memtrail::snapshot
