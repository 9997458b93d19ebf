#include "detail/msgpack_outside_memory.hpp"

#include <msgpack/pack.hpp>

#include <string>

namespace memtrail::snapshot::detail {

namespace {

// Event rows: is_free, kind, device, address, size, stream, time_ns, call, library, stack.
constexpr uint32_t event_row_fields = 10;

struct byte_sink {
    std::vector<uint8_t>* out;
    void write(const char* data, size_t size) {
        const auto* p = reinterpret_cast<const uint8_t*>(data);
        out->insert(out->end(), p, p + size);
    }
};

class outside_writer {
  public:
    explicit outside_writer(std::vector<uint8_t>& out) : sink_{&out}, pack_(sink_) {}

    void write(const outside_memory& outside) {
        pack_.pack_map(5);
        string("version");
        pack_.pack_uint32(outside_memory_version);
        string("events");
        events(outside.events);
        string("dropped");
        pack_.pack_uint64(outside.dropped);
        string("live");
        events(outside.live);
        string("accounting");
        pack_.pack_array(static_cast<uint32_t>(outside.accounting.size()));
        for (const memory_accounting& a : outside.accounting) {
            accounting(a);
        }
    }

  private:
    void string(std::string_view v) {
        pack_.pack_str(static_cast<uint32_t>(v.size()));
        pack_.pack_str_body(v.data(), static_cast<uint32_t>(v.size()));
    }

    void events(const std::vector<outside_event>& list) {
        pack_.pack_array(static_cast<uint32_t>(list.size()));
        for (const outside_event& e : list) {
            pack_.pack_array(event_row_fields);
            e.is_free ? pack_.pack_true() : pack_.pack_false();
            pack_.pack_uint8(static_cast<uint8_t>(e.kind));
            pack_.pack_int64(e.device);
            pack_.pack_uint64(e.address);
            pack_.pack_uint64(e.size);
            pack_.pack_uint64(e.stream);
            pack_.pack_int64(e.time_ns);
            pack_.pack_uint32(e.call);
            pack_.pack_uint32(e.library);
            pack_.pack_uint32(e.stack);
        }
    }

    void accounting(const memory_accounting& a) {
        pack_.pack_map(11);
        string("moment");
        string(a.moment);
        string("device");
        pack_.pack_int64(a.device);
        string("time_ns");
        pack_.pack_int64(a.time_ns);
        string("device_total");
        pack_.pack_uint64(a.device_total);
        string("device_used");
        pack_.pack_uint64(a.device_used);
        string("allocator_reserved");
        pack_.pack_uint64(a.allocator_reserved);
        string("outside_by_library");
        pack_.pack_array(static_cast<uint32_t>(a.outside_by_library.size()));
        for (const auto& [library, bytes] : a.outside_by_library) {
            pack_.pack_array(2);
            string(library);
            pack_.pack_uint64(bytes);
        }
        string("context");
        pack_.pack_uint64(a.context);
        string("other_processes");
        pack_.pack_uint64(a.other_processes);
        string("unsplit");
        string(a.unsplit);
        string("pinned_host");
        pack_.pack_uint64(a.pinned_host);
    }

    byte_sink sink_;
    msgpack::packer<byte_sink> pack_;
};

class outside_reader {
  public:
    outside_reader(msgpack_cursor& in, snapshot& out) : in_(in), out_(out) {}

    void read() {
        for (uint32_t n = in_.read_map("section 'outside_memory'"); n > 0; --n) {
            const auto key = in_.read_string("an outside_memory key");
            if (key == "version") {
                const size_t at = in_.offset();
                const uint64_t version = in_.read_uint("outside_memory 'version'");
                if (version == 0) {
                    in_.fail(at, "outside_memory 'version'", "version 0 does not exist");
                }
            } else if (key == "events") {
                events(out_.outside.events, "an outside_memory event");
            } else if (key == "dropped") {
                out_.outside.dropped = in_.read_uint("outside_memory 'dropped'");
            } else if (key == "live") {
                events(out_.outside.live, "a live outside allocation");
            } else if (key == "accounting") {
                for (uint32_t a = in_.read_array("outside_memory 'accounting'"); a > 0; --a) {
                    out_.outside.accounting.push_back(accounting());
                }
            } else {
                in_.skip("an unknown outside_memory key");  // from a later version
            }
        }
    }

  private:
    uint32_t checked_id(size_t table_size, const char* table, std::string_view what) {
        const size_t at = in_.offset();
        const uint64_t id = in_.read_uint(what);
        if (id >= table_size) {
            in_.fail(at, what,
                     std::string(table) + " id " + std::to_string(id) + " is out of range (" +
                         std::to_string(table_size) + " " + table + "s)");
        }
        return static_cast<uint32_t>(id);
    }

    int8_t device(std::string_view what) {
        const size_t at = in_.offset();
        const int64_t d = in_.read_int(what);
        if (d < INT8_MIN || d > INT8_MAX) {
            in_.fail(at, what, "device " + std::to_string(d) + " does not fit int8");
        }
        return static_cast<int8_t>(d);
    }

    void events(std::vector<outside_event>& list, std::string_view what) {
        for (uint32_t n = in_.read_array(what); n > 0; --n) {
            const size_t at = in_.offset();
            const uint32_t fields = in_.read_array(what);
            if (fields < event_row_fields) {
                in_.fail(at, what,
                         "row has " + std::to_string(fields) + " fields, expected " +
                             std::to_string(event_row_fields));
            }
            outside_event e;
            e.is_free = in_.read_bool(what);
            const size_t kind_at = in_.offset();
            const uint64_t kind = in_.read_uint(what);
            if (kind >= outside_kind_count) {
                in_.fail(kind_at, what, "memory kind " + std::to_string(kind) + " is unknown");
            }
            e.kind = static_cast<outside_kind>(kind);
            e.device = device(what);
            e.address = in_.read_uint(what);
            e.size = in_.read_uint(what);
            e.stream = in_.read_uint(what);
            e.time_ns = in_.read_int(what);
            e.call = checked_id(out_.strings().size(), "string", what);
            e.library = checked_id(out_.strings().size(), "string", what);
            e.stack = checked_id(out_.stacks().size(), "stack", what);
            for (uint32_t extra = fields - event_row_fields; extra > 0; --extra) {
                in_.skip(what);  // fields of a later version
            }
            list.push_back(e);
        }
    }

    memory_accounting accounting() {
        static constexpr std::string_view what = "an accounting row";
        memory_accounting a;
        for (uint32_t n = in_.read_map(what); n > 0; --n) {
            const auto key = in_.read_string("an accounting key");
            if (key == "moment") {
                a.moment = in_.read_string(what);
            } else if (key == "device") {
                a.device = device(what);
            } else if (key == "time_ns") {
                a.time_ns = in_.read_int(what);
            } else if (key == "device_total") {
                a.device_total = in_.read_uint(what);
            } else if (key == "device_used") {
                a.device_used = in_.read_uint(what);
            } else if (key == "allocator_reserved") {
                a.allocator_reserved = in_.read_uint(what);
            } else if (key == "outside_by_library") {
                for (uint32_t l = in_.read_array(what); l > 0; --l) {
                    const size_t at = in_.offset();
                    if (in_.read_array(what) != 2) {
                        in_.fail(at, what, "a library's bytes are [name, bytes]");
                    }
                    std::string library(in_.read_string(what));
                    a.outside_by_library.emplace_back(std::move(library), in_.read_uint(what));
                }
            } else if (key == "context") {
                a.context = in_.read_uint(what);
            } else if (key == "other_processes") {
                a.other_processes = in_.read_uint(what);
            } else if (key == "unsplit") {
                a.unsplit = in_.read_string(what);
            } else if (key == "pinned_host") {
                a.pinned_host = in_.read_uint(what);
            } else {
                in_.skip("an unknown accounting key");
            }
        }
        return a;
    }

    msgpack_cursor& in_;
    snapshot& out_;
};

}  // namespace

std::vector<uint8_t> encode_outside_memory(const outside_memory& outside) {
    std::vector<uint8_t> out;
    outside_writer(out).write(outside);
    return out;
}

void read_outside_memory(msgpack_cursor& in, snapshot& out) {
    outside_reader(in, out).read();
}

}  // namespace memtrail::snapshot::detail
