// Maps the value tree of a PyTorch snapshot pickle onto the snapshot model.
//
// The schema is walked at a fixed depth (root > segments > blocks > frames), so a pickle whose
// containers refer to themselves cannot loop. Memo sharing could still make a small file describe
// an enormous snapshot (a million references to one million-entry list); every item visited is
// charged to a budget proportional to the input, and frames and stacks shared through the memo
// are converted once and cached. Text is charged by the byte: a memo'd string costs a few bytes
// per reference but its whole length each time it is copied into a text the reader builds (a
// 300 KB pickle of settings repeating one long string took over 3 GB), so every byte of text
// built is charged to a second budget of the input's size plus 1 MiB.
//
// Index of this file:
// [SECTION] native frames by their file names
// [SECTION] the reader
// [SECTION] errors and type checks
// [SECTION] frames
// [SECTION] segments
// [SECTION] traces
// [SECTION] allocator settings

#include <algorithm>
#include <bit>
#include <charconv>
#include <cmath>
#include <string>

#include "detail/file_io.hpp"
#include "detail/pickle_vm.hpp"
#include "memtrail/snapshot/format_error.hpp"
#include "memtrail/snapshot/torch_pickle.hpp"

namespace memtrail::snapshot {

namespace {

using detail::pickle_kind;
using detail::pickle_tree;
using detail::value_index;

constexpr int max_devices = 128;  // device numbers are int8 in the model
constexpr size_t max_repr_depth = 8;

//-------------------------------------------------------------------------------------------------
// [SECTION] native frames by their file names
//-------------------------------------------------------------------------------------------------

// Native frames that PyTorch mixes into Python stacks name C/C++/CUDA sources, or nothing.
bool looks_native(std::string_view filename) {
    if (filename.empty() || filename == "??") {
        return true;
    }
    const auto dot = filename.rfind('.');
    if (dot == std::string_view::npos) {
        return false;
    }
    const auto ext = filename.substr(dot + 1);
    for (const std::string_view native :
         {"c", "cc", "cpp", "cxx", "cu", "cuh", "h", "hh", "hpp", "hxx", "inl", "so"}) {
        if (ext == native) {
            return true;
        }
    }
    return filename.find(".so.") != std::string_view::npos;
}

//-------------------------------------------------------------------------------------------------
// [SECTION] the reader
//-------------------------------------------------------------------------------------------------

class torch_reader {
  public:
    explicit torch_reader(std::span<const uint8_t> bytes)
        : tree_(bytes),
          budget_(2 * bytes.size() + 4096),
          text_budget_(bytes.size() + text_slack),
          cache_(tree_.value_count(), 0) {}

    snapshot read() {
        out_.info.producer = "torch pickle import";
        const value_index root = tree_.root();
        if (tree_.at(root).kind == pickle_kind::list) {
            // torch.cuda.memory_snapshot() and old _snapshot() versions: just the segments.
            read_segments(root);
        } else {
            expect(root, pickle_kind::dict, "the top-level value", "");
            for_each_pair(root, [&](std::string_view key, value_index v) {
                if (key == "segments") {
                    read_segments(v);
                } else if (key == "device_traces") {
                    read_device_traces(v);
                } else if (key == "allocator_settings") {
                    read_settings(v);
                } else if (key == "external_annotations") {
                    read_annotations(v);
                }
            });
        }
        std::stable_sort(
            out_.segments.begin(), out_.segments.end(), [](const segment& a, const segment& b) {
                return a.device != b.device ? a.device < b.device : a.address < b.address;
            });
        return std::move(out_);
    }

  private:
    //----------------------------------------------------------------------------------------------
    // [SECTION] errors and type checks
    //----------------------------------------------------------------------------------------------

    [[noreturn]] void fail_value(value_index v, std::string_view key, std::string_view context,
                                 std::string_view expected) const {
        std::string message = "pickle: ";
        if (!key.empty()) {
            message += "key '" + std::string(key) + "' of ";
        }
        message += std::string(context) + " at byte " + std::to_string(tree_.at(v).offset) +
                   ": expected " + std::string(expected) + ", got " + describe(v);
        throw format_error(message);
    }

    // What a value is, for errors: numbers with their value, strings with (the start of) their
    // text, so "expected X, got Y" always tells X and Y apart.
    std::string describe(value_index v) const {
        switch (tree_.at(v).kind) {
            case pickle_kind::integer:
                return "the integer " + std::to_string(tree_.as_int(v));
            case pickle_kind::big_unsigned:
                return "the integer " + std::to_string(tree_.as_uint(v)) + " (above INT64_MAX)";
            case pickle_kind::big_integer:
                return "a " + std::to_string(tree_.as_text(v).size()) +
                       "-byte integer out of the 64-bit range";
            case pickle_kind::floating:
                return "the float " + float_text(tree_.as_double(v));
            case pickle_kind::string: {
                constexpr size_t shown = 40;
                const std::string_view text = tree_.as_text(v);
                return "the string \"" + std::string(text.substr(0, shown)) +
                       (text.size() > shown ? "...\"" : "\"");
            }
            default:
                return std::string(detail::pickle_kind_name(tree_.at(v).kind));
        }
    }

    void expect(value_index v, pickle_kind kind, std::string_view context, std::string_view key) {
        if (tree_.at(v).kind != kind) {
            fail_value(v, key, context, detail::pickle_kind_name(kind));
        }
    }

    void charge(size_t items, value_index v) {
        if (items > budget_) {
            throw format_error("pickle: container at byte " + std::to_string(tree_.at(v).offset) +
                               " is shared so often that the snapshot would expand far beyond " +
                               "the input's size");
        }
        budget_ -= items;
    }

    // Text the reader copies out of the tree (settings, their Python repr), by the byte.
    void charge_text(size_t bytes, value_index v) {
        if (bytes > text_budget_) {
            throw format_error("pickle: value at byte " + std::to_string(tree_.at(v).offset) +
                               " repeats its text so often that the snapshot's text would " +
                               "expand beyond the input's size plus 1 MiB");
        }
        text_budget_ -= bytes;
    }

    std::string copy_text(std::string_view text, value_index v) {
        charge_text(text.size(), v);
        return std::string(text);
    }

    template <class F>
    void for_each_item(value_index list, std::string_view context, std::string_view key, F&& f) {
        const auto kind = tree_.at(list).kind;
        if (kind != pickle_kind::list && kind != pickle_kind::tuple) {
            fail_value(list, key, context, "a list");
        }
        charge(tree_.item_count(list), list);
        tree_.for_each_item(list, f);
    }

    template <class F>
    void for_each_pair(value_index dict, F&& f) {
        charge(tree_.item_count(dict), dict);
        bool is_key = true;
        value_index key = 0;
        tree_.for_each_item(dict, [&](value_index item) {
            if (is_key) {
                key = item;
            } else if (tree_.at(key).kind == pickle_kind::string) {
                f(tree_.as_text(key), item);
            }
            is_key = !is_key;
        });
    }

    int64_t get_int(value_index v, std::string_view key, std::string_view context) {
        if (tree_.at(v).kind != pickle_kind::integer) {
            fail_value(v, key, context, "a signed 64-bit integer");
        }
        return tree_.as_int(v);
    }

    uint64_t get_uint(value_index v, std::string_view key, std::string_view context) {
        const auto kind = tree_.at(v).kind;
        if (kind == pickle_kind::big_unsigned ||
            (kind == pickle_kind::integer && tree_.as_int(v) >= 0)) {
            return tree_.as_uint(v);
        }
        fail_value(v, key, context, "a non-negative 64-bit integer");
    }

    // A field PyTorch writes as int64 and memtrail keeps as uint64 (a stream handle): either
    // signedness is taken, as its 64 bits.
    uint64_t get_bits64(value_index v, std::string_view key, std::string_view context) {
        const auto kind = tree_.at(v).kind;
        if (kind != pickle_kind::integer && kind != pickle_kind::big_unsigned) {
            fail_value(v, key, context, "a 64-bit integer");
        }
        return tree_.as_uint(v);
    }

    // PyTorch writes an unknown line as -1, or as 2^64-1 where it went through uint64_t (the
    // symbolizer of CapturedTraceback); these, None, 0 and lines past uint32 are all "no line".
    uint32_t get_line(value_index v) {
        if (tree_.at(v).kind == pickle_kind::none) {
            return 0;
        }
        if (!tree_.is_any_integer(v)) {
            fail_value(v, "line", "a frame", "an integer or None");
        }
        if (tree_.at(v).kind != pickle_kind::integer) {
            return 0;
        }
        const int64_t line = tree_.as_int(v);
        return line > 0 && line <= UINT32_MAX ? static_cast<uint32_t>(line) : 0;
    }

    bool get_bool(value_index v, std::string_view key, std::string_view context) {
        if (tree_.at(v).kind != pickle_kind::boolean) {
            fail_value(v, key, context, "a bool");
        }
        return tree_.as_bool(v);
    }

    double get_double(value_index v, std::string_view key, std::string_view context) {
        const auto kind = tree_.at(v).kind;
        if (kind == pickle_kind::floating) {
            return tree_.as_double(v);
        }
        if (kind == pickle_kind::integer) {
            return static_cast<double>(tree_.as_int(v));
        }
        if (kind == pickle_kind::big_unsigned) {
            return static_cast<double>(tree_.as_uint(v));
        }
        fail_value(v, key, context, "a float");
    }

    std::string_view get_text(value_index v, std::string_view key, std::string_view context) {
        if (tree_.at(v).kind != pickle_kind::string) {
            fail_value(v, key, context, "a string");
        }
        return tree_.as_text(v);
    }

    int8_t get_device(value_index v, std::string_view key, std::string_view context) {
        const int64_t device = get_int(v, key, context);
        if (device < 0 || device >= max_devices) {
            throw format_error("pickle: key '" + std::string(key) + "' of " + std::string(context) +
                               " at byte " + std::to_string(tree_.at(v).offset) + ": device " +
                               std::to_string(device) + " is outside 0.." +
                               std::to_string(max_devices - 1));
        }
        return static_cast<int8_t>(device);
    }

    int64_t get_time_ns(value_index v, std::string_view key, std::string_view context) {
        const int64_t us = get_int(v, key, context);
        if (us > INT64_MAX / 1000 || us < INT64_MIN / 1000) {
            throw format_error("pickle: key '" + std::string(key) + "' of " + std::string(context) +
                               " at byte " + std::to_string(tree_.at(v).offset) +
                               ": time in microseconds overflows nanoseconds");
        }
        return us * 1000;
    }

    // Strings shared through the memo are interned once.
    string_id get_string_id(value_index v, std::string_view key, std::string_view context) {
        if (tree_.at(v).kind == pickle_kind::none) {
            return no_id;
        }
        const std::string_view text = get_text(v, key, context);
        if (cache_[v] == 0) {
            cache_[v] = out_.intern_string(text) + 1;
        }
        return cache_[v] - 1;
    }

    //----------------------------------------------------------------------------------------------
    // [SECTION] frames
    //----------------------------------------------------------------------------------------------

    // The kind is checked before the cache: each kind caches one sort of id (string -> string,
    // dict -> frame, list -> stack), so a list misplaced among frames cannot pass as a frame id.
    frame_id read_frame(value_index v) {
        expect(v, pickle_kind::dict, "a frame", "");
        if (cache_[v] != 0) {
            return cache_[v] - 1;
        }
        frame f;
        f.kind = frame_kind::python;
        for_each_pair(v, [&](std::string_view key, value_index item) {
            if (key == "name") {
                f.function = get_string_id(item, key, "a frame");
            } else if (key == "filename") {
                f.filename = get_string_id(item, key, "a frame");
            } else if (key == "line") {
                f.line = get_line(item);
            }
        });
        if (looks_native(out_.string_at(f.filename))) {
            f.kind = frame_kind::native;
        }
        const frame_id id = out_.intern_frame(f);
        cache_[v] = id + 1;
        return id;
    }

    stack_id read_stack(value_index v, std::string_view context) {
        if (tree_.at(v).kind == pickle_kind::none) {
            return no_id;
        }
        const auto kind = tree_.at(v).kind;
        if ((kind == pickle_kind::list || kind == pickle_kind::tuple) && cache_[v] != 0) {
            return cache_[v] - 1;
        }
        stack_frames_.clear();
        for_each_item(v, context, "frames",
                      [&](value_index item) { stack_frames_.push_back(read_frame(item)); });
        const stack_id id = out_.intern_stack(stack_frames_);
        cache_[v] = id + 1;
        return id;
    }

    //----------------------------------------------------------------------------------------------
    // [SECTION] segments
    //----------------------------------------------------------------------------------------------

    void read_segments(value_index list) {
        for_each_item(list, "the snapshot", "segments",
                      [&](value_index item) { out_.segments.push_back(read_segment(item)); });
    }

    segment read_segment(value_index v) {
        static constexpr std::string_view ctx = "a segment";
        expect(v, pickle_kind::dict, ctx, "");
        segment s;
        for_each_pair(v, [&](std::string_view key, value_index item) {
            if (key == "device") {
                s.device = get_device(item, key, ctx);
            } else if (key == "address") {
                s.address = get_uint(item, key, ctx);
            } else if (key == "total_size") {
                s.total_size = get_uint(item, key, ctx);
            } else if (key == "allocated_size") {
                s.allocated_size = get_uint(item, key, ctx);
            } else if (key == "active_size") {
                s.active_size = get_uint(item, key, ctx);
            } else if (key == "requested_size") {
                s.requested_size = get_uint(item, key, ctx);
            } else if (key == "stream") {
                s.stream = get_bits64(item, key, ctx);
            } else if (key == "segment_type") {
                const auto type = get_text(item, key, ctx);
                if (type != "large" && type != "small") {
                    throw format_error("pickle: key 'segment_type' of a segment at byte " +
                                       std::to_string(tree_.at(item).offset) +
                                       ": expected \"large\" or \"small\", got \"" +
                                       std::string(type) + "\"");
                }
                s.is_large = type == "large";
            } else if (key == "segment_pool_id") {
                read_pool_id(item, s);
            } else if (key == "is_expandable") {
                s.is_expandable = get_bool(item, key, ctx);
            } else if (key == "frames") {
                s.stack = read_stack(item, ctx);
            } else if (key == "time_us") {
                s.time_ns = get_time_ns(item, key, ctx);
            } else if (key == "blocks") {
                for_each_item(item, ctx, key,
                              [&](value_index b) { s.blocks.push_back(read_block(b)); });
            }
        });
        return s;
    }

    void read_pool_id(value_index v, segment& s) {
        static constexpr std::string_view ctx = "a segment";
        size_t index = 0;
        for_each_item(v, ctx, "segment_pool_id", [&](value_index item) {
            const uint64_t part = get_uint(item, "segment_pool_id", ctx);
            if (index == 0) {
                s.pool_id_first = part;
            } else if (index == 1) {
                s.pool_id_second = part;
            }
            ++index;
        });
        if (index != 2) {
            fail_value(v, "segment_pool_id", ctx, "a pair of integers");
        }
    }

    block read_block(value_index v) {
        static constexpr std::string_view ctx = "a block";
        expect(v, pickle_kind::dict, ctx, "");
        block b;
        for_each_pair(v, [&](std::string_view key, value_index item) {
            if (key == "address") {
                b.address = get_uint(item, key, ctx);
            } else if (key == "size") {
                b.size = get_uint(item, key, ctx);
            } else if (key == "requested_size") {
                b.requested_size = get_uint(item, key, ctx);
            } else if (key == "state") {
                const auto name = get_text(item, key, ctx);
                if (!parse_block_state(name, b.state)) {
                    throw format_error("pickle: key 'state' of a block at byte " +
                                       std::to_string(tree_.at(item).offset) +
                                       ": unknown block state \"" + std::string(name) + "\"");
                }
            } else if (key == "frames") {
                b.stack = read_stack(item, ctx);
            } else if (key == "time_us") {
                b.time_ns = get_time_ns(item, key, ctx);
            }
        });
        return b;
    }

    //----------------------------------------------------------------------------------------------
    // [SECTION] traces
    //----------------------------------------------------------------------------------------------

    void read_device_traces(value_index list) {
        int device = 0;
        for_each_item(list, "the snapshot", "device_traces", [&](value_index trace) {
            if (device >= max_devices) {
                throw format_error("pickle: device_traces at byte " +
                                   std::to_string(tree_.at(list).offset) + " lists more than " +
                                   std::to_string(max_devices) + " devices");
            }
            auto& out = out_.trace_for(device);
            // Only a container has a count; for_each_item refuses anything else below.
            const auto kind = tree_.at(trace).kind;
            if (kind == pickle_kind::list || kind == pickle_kind::tuple) {
                out.entries.reserve(tree_.item_count(trace));
            }
            for_each_item(trace, "device_traces", "", [&](value_index item) {
                out.entries.push_back(read_trace_entry(item, device));
            });
            ++device;
        });
    }

    trace_entry read_trace_entry(value_index v, int device) {
        static constexpr std::string_view ctx = "a trace entry";
        expect(v, pickle_kind::dict, ctx, "");
        trace_entry e;
        e.device = static_cast<int8_t>(device);
        bool has_action = false;
        for_each_pair(v, [&](std::string_view key, value_index item) {
            if (key == "action") {
                const auto name = get_text(item, key, ctx);
                if (!parse_action(name, e.kind)) {
                    throw format_error("pickle: key 'action' of a trace entry at byte " +
                                       std::to_string(tree_.at(item).offset) +
                                       ": unknown action \"" + std::string(name) + "\"");
                }
                has_action = true;
            } else if (key == "addr" || key == "device_free") {
                e.address = get_uint(item, key, ctx);
            } else if (key == "size") {
                e.size = get_uint(item, key, ctx);
            } else if (key == "stream") {
                e.stream = get_bits64(item, key, ctx);
            } else if (key == "time_us") {
                e.time_ns = get_time_ns(item, key, ctx);
            } else if (key == "frames") {
                e.stack = read_stack(item, ctx);
            } else if (key == "compile_context") {
                e.compile_context = get_string_id(item, key, ctx);
            } else if (key == "user_metadata") {
                e.user_metadata = get_string_id(item, key, ctx);
            } else if (key == "name") {
                e.name = get_string_id(item, key, ctx);
            }
        });
        if (!has_action) {
            throw format_error("pickle: trace entry at byte " + std::to_string(tree_.at(v).offset) +
                               " has no 'action'");
        }
        if (e.kind == action::alloc || e.kind == action::free_requested ||
            e.kind == action::free_completed) {
            e.requested_size = e.size;
        }
        return e;
    }

    void read_annotations(value_index list) {
        static constexpr std::string_view ctx = "an external annotation";
        for_each_item(list, "the snapshot", "external_annotations", [&](value_index v) {
            expect(v, pickle_kind::dict, ctx, "");
            annotation a;
            for_each_pair(v, [&](std::string_view key, value_index item) {
                if (key == "stage") {
                    const auto stage = get_text(item, key, ctx);
                    if (stage != "START" && stage != "END") {
                        throw format_error(
                            "pickle: key 'stage' of an external annotation at " +
                            std::string("byte ") + std::to_string(tree_.at(item).offset) +
                            ": expected \"START\" or \"END\", got \"" + std::string(stage) + "\"");
                    }
                    a.is_start = stage == "START";
                } else if (key == "name") {
                    a.name = get_string_id(item, key, ctx);
                } else if (key == "device") {
                    a.device = get_device(item, key, ctx);
                } else if (key == "time_us") {
                    a.time_ns = get_time_ns(item, key, ctx);
                }
            });
            out_.annotations.push_back(a);
        });
    }

    //----------------------------------------------------------------------------------------------
    // [SECTION] allocator settings
    //----------------------------------------------------------------------------------------------

    void read_settings(value_index v) {
        static constexpr std::string_view ctx = "allocator_settings";
        expect(v, pickle_kind::dict, "the snapshot", "allocator_settings");
        auto& s = out_.settings;
        for_each_pair(v, [&](std::string_view key, value_index item) {
            if (key == "PYTORCH_CUDA_ALLOC_CONF") {
                s.conf = tree_.at(item).kind == pickle_kind::none
                             ? std::string()
                             : copy_text(get_text(item, key, ctx), item);
            } else if (key == "max_split_size") {
                s.max_split_size = get_int(item, key, ctx);
            } else if (key == "max_non_split_rounding_size") {
                s.max_non_split_rounding_size = get_uint(item, key, ctx);
            } else if (key == "garbage_collection_threshold") {
                s.garbage_collection_threshold = get_double(item, key, ctx);
            } else if (key == "expandable_segments") {
                s.expandable_segments = get_bool(item, key, ctx);
            } else if (key == "roundup_power2_divisions") {
                read_roundup_divisions(item);
            } else {
                charge_text(key.size(), item);
                s.other[std::string(key)] = python_repr(item, 0);
            }
        });
    }

    // {"1": n, "2": n, "4": n, ..., "32768": n}: the divisions for sizes up to each power of
    // two MiB; index i of the model's vector is the key 2^i.
    void read_roundup_divisions(value_index v) {
        static constexpr std::string_view ctx = "allocator_settings";
        auto& divisions = out_.settings.roundup_power2_divisions;
        if (tree_.at(v).kind == pickle_kind::list) {
            divisions.clear();
            for_each_item(v, ctx, "roundup_power2_divisions", [&](value_index item) {
                if (divisions.size() >= 64) {
                    fail_value(v, "roundup_power2_divisions", ctx, "at most 64 divisions");
                }
                divisions.push_back(get_uint(item, "roundup_power2_divisions", ctx));
            });
            return;
        }
        expect(v, pickle_kind::dict, ctx, "roundup_power2_divisions");
        for_each_pair(v, [&](std::string_view key, value_index item) {
            uint64_t power = 0;
            const auto [end, ec] = std::from_chars(key.data(), key.data() + key.size(), power);
            if (ec != std::errc() || end != key.data() + key.size() || power == 0 ||
                (power & (power - 1)) != 0 || power > (uint64_t{1} << 63)) {
                throw format_error(
                    "pickle: key '" + std::string(key) + "' of roundup_power2_divisions at byte " +
                    std::to_string(tree_.at(item).offset) + ": expected a power of two");
            }
            const auto index = static_cast<size_t>(std::countr_zero(power));
            if (index >= divisions.size()) {
                divisions.resize(index + 1, 0);
            }
            divisions[index] = get_uint(item, key, ctx);
        });
    }

    // Settings memtrail does not interpret, kept as Python would print them.
    std::string python_repr(value_index v, size_t depth) {
        const auto& value = tree_.at(v);
        switch (value.kind) {
            case pickle_kind::none:
                return "None";
            case pickle_kind::boolean:
                return tree_.as_bool(v) ? "True" : "False";
            case pickle_kind::integer:
                return std::to_string(tree_.as_int(v));
            case pickle_kind::big_unsigned:
                return std::to_string(tree_.as_uint(v));
            case pickle_kind::big_integer:
                fail_value(v, "", "allocator_settings", "a value of at most 64 bits");
            case pickle_kind::floating:
                return float_text(tree_.as_double(v));
            case pickle_kind::string:
            case pickle_kind::bytes:
                return copy_text(tree_.as_text(v), v);
            case pickle_kind::list:
            case pickle_kind::tuple:
            case pickle_kind::dict:
                break;
        }
        if (depth >= max_repr_depth) {
            return "...";
        }
        const bool is_dict = value.kind == pickle_kind::dict;
        std::string text = is_dict ? "{" : value.kind == pickle_kind::list ? "[" : "(";
        charge(tree_.item_count(v), v);
        size_t index = 0;
        tree_.for_each_item(v, [&](value_index item) {
            if (index != 0) {
                text += is_dict && index % 2 == 1 ? ": " : ", ";
            }
            const std::string item_text = python_repr(item, depth + 1);
            charge_text(item_text.size() + 2, item);  // its copy into this container's text
            text += item_text;
            ++index;
        });
        text += is_dict ? "}" : value.kind == pickle_kind::list ? "]" : ")";
        return text;
    }

    static std::string float_text(double d) {
        if (std::isnan(d)) {
            return "nan";
        }
        if (std::isinf(d)) {
            return d > 0 ? "inf" : "-inf";
        }
        char buffer[32];
        const auto result = std::to_chars(buffer, buffer + sizeof buffer, d);
        std::string text(buffer, result.ptr);
        // Python prints floats with a point; keeping it lets the writer give back a float.
        if (text.find_first_of(".e") == std::string::npos) {
            text += ".0";
        }
        return text;
    }

    static constexpr size_t text_slack = size_t{1} << 20;
    const pickle_tree tree_;
    size_t budget_;
    size_t text_budget_;  // bytes of text still allowed
    // Per value: 1 + the id it was interned as (a string, a frame dict, a frames list); 0 = not
    // yet.
    std::vector<uint32_t> cache_;
    std::vector<frame_id> stack_frames_;  // read_stack's frames, kept to reuse their memory
    snapshot out_;
};

}  // namespace

snapshot read_torch_pickle(std::span<const uint8_t> bytes) {
    return torch_reader(bytes).read();
}

snapshot read_torch_pickle(const std::filesystem::path& path) {
    const auto bytes = detail::read_whole_file(path);
    return read_torch_pickle(std::span<const uint8_t>(bytes));
}

}  // namespace memtrail::snapshot
