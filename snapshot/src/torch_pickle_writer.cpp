// Writes the snapshot model as PyTorch's snapshot pickle (the dict of
// torch.cuda.memory._snapshot()), with the keys in PyTorch's order. Keys, strings and frame dicts
// are memoized as PyTorch's output shares them, and frame lists by default too (one per stack,
// which keeps a million-entry trace near 60 bytes per entry; PyTorch's own give each allocation
// a list of its own, frames_lists::one_per_entry).
//
// Index of this file:
// [SECTION] keys and settings text
// [SECTION] the writer
// [SECTION] frames and stacks
// [SECTION] segments
// [SECTION] traces and annotations
// [SECTION] allocator settings

#include <array>
#include <charconv>
#include <cstdio>
#include <string>

#include "detail/file_io.hpp"
#include "detail/pickle_emitter.hpp"
#include "memtrail/snapshot/output_file.hpp"
#include "memtrail/snapshot/torch_pickle.hpp"

namespace memtrail::snapshot {

namespace {

using detail::pickle_emitter;

// Python's pickler batches APPENDS/SETITEMS by 1000 items; doing the same keeps every unpickler's
// stack small.
constexpr size_t batch_size = 1000;

//-------------------------------------------------------------------------------------------------
// [SECTION] keys and settings text
//-------------------------------------------------------------------------------------------------

enum key : size_t {
    k_segments,
    k_device_traces,
    k_allocator_settings,
    k_external_annotations,
    k_device,
    k_address,
    k_total_size,
    k_allocated_size,
    k_active_size,
    k_requested_size,
    k_stream,
    k_segment_type,
    k_segment_pool_id,
    k_is_expandable,
    k_frames,
    k_blocks,
    k_size,
    k_state,
    k_time_us,
    k_action,
    k_addr,
    k_device_free,
    k_compile_context,
    k_user_metadata,
    k_name,
    k_filename,
    k_line,
    k_stage,
    k_large,
    k_small,
    k_start,
    k_end,
    key_count,
};

constexpr std::array<std::string_view, key_count> key_text = {
    "segments",
    "device_traces",
    "allocator_settings",
    "external_annotations",
    "device",
    "address",
    "total_size",
    "allocated_size",
    "active_size",
    "requested_size",
    "stream",
    "segment_type",
    "segment_pool_id",
    "is_expandable",
    "frames",
    "blocks",
    "size",
    "state",
    "time_us",
    "action",
    "addr",
    "device_free",
    "compile_context",
    "user_metadata",
    "name",
    "filename",
    "line",
    "stage",
    "large",
    "small",
    "START",
    "END",
};

// Inverse of the reader's python_repr for scalars, so unknown settings keep their Python type.
void emit_setting_text(pickle_emitter& out, const std::string& text) {
    if (text == "True" || text == "False") {
        out.boolean(text == "True");
        return;
    }
    if (text == "None") {
        out.none();
        return;
    }
    const char* begin = text.data();
    const char* end = begin + text.size();
    int64_t i = 0;
    if (auto [p, ec] = std::from_chars(begin, end, i); ec == std::errc() && p == end) {
        out.integer(i);
        return;
    }
    uint64_t u = 0;
    if (auto [p, ec] = std::from_chars(begin, end, u); ec == std::errc() && p == end) {
        out.unsigned_integer(u);
        return;
    }
    double d = 0;
    if (text.find_first_of(".en") != std::string::npos) {
        if (auto [p, ec] = std::from_chars(begin, end, d); ec == std::errc() && p == end) {
            out.floating(d);
            return;
        }
    }
    out.string(text);
}

//-------------------------------------------------------------------------------------------------
// [SECTION] the writer
//-------------------------------------------------------------------------------------------------

class torch_writer {
  public:
    torch_writer(const snapshot& s, frames_lists lists)
        : s_(s),
          lists_(lists),
          string_memo_(s.strings().size(), pickle_emitter::not_memoized),
          frame_memo_(s.frames().size(), pickle_emitter::not_memoized),
          stack_memo_(s.stacks().size(), pickle_emitter::not_memoized) {
        key_memo_.fill(pickle_emitter::not_memoized);
        action_memo_.fill(pickle_emitter::not_memoized);
        state_memo_.fill(pickle_emitter::not_memoized);
    }

    std::vector<uint8_t> write() {
        out_.empty_dict();
        out_.memoize();
        out_.mark();
        key(k_segments);
        write_segments();
        key(k_device_traces);
        write_traces();
        key(k_allocator_settings);
        write_settings();
        key(k_external_annotations);
        write_annotations();
        out_.setitems();
        return out_.finish();
    }

  private:
    void key(key k) { out_.memo_string(key_text[k], key_memo_[k]); }

    void text(string_id id) { out_.memo_string(s_.string_at(id), string_memo_[id]); }

    // Writes `count` items with `item(i)`, in APPENDS batches.
    template <class F>
    void list(size_t count, F&& item) {
        out_.empty_list();
        out_.memoize();
        for (size_t first = 0; first < count; first += batch_size) {
            out_.mark();
            const size_t last = std::min(count, first + batch_size);
            for (size_t i = first; i < last; ++i) {
                item(i);
            }
            out_.appends();
        }
    }

    //----------------------------------------------------------------------------------------------
    // [SECTION] frames and stacks
    //----------------------------------------------------------------------------------------------

    void write_frame(frame_id id) {
        if (frame_memo_[id] != pickle_emitter::not_memoized) {
            out_.get(frame_memo_[id]);
            return;
        }
        const frame& f = s_.frame_at(id);
        out_.empty_dict();
        frame_memo_[id] = out_.memoize();
        out_.mark();
        key(k_name);
        if (f.kind == frame_kind::native && f.function == no_id) {
            // No symbol: PyTorch's viewers still need a name, module+offset identifies the code.
            char offset[32];
            std::snprintf(offset, sizeof offset, "+0x%llx",
                          static_cast<unsigned long long>(f.module_offset));
            const auto module = s_.string_at(f.module);
            out_.string(std::string(module.empty() ? "??" : module) + offset);
        } else {
            text(f.function);
        }
        key(k_filename);
        if (f.filename == no_id && f.module != no_id) {
            text(f.module);
        } else {
            text(f.filename);
        }
        key(k_line);
        out_.integer(f.line);
        out_.setitems();
    }

    void write_stack(stack_id id) {
        if (lists_ == frames_lists::shared && stack_memo_[id] != pickle_emitter::not_memoized) {
            out_.get(stack_memo_[id]);
            return;
        }
        const auto& frames = s_.stack_at(id);
        out_.empty_list();
        stack_memo_[id] = out_.memoize();
        for (size_t first = 0; first < frames.size(); first += batch_size) {
            out_.mark();
            const size_t last = std::min(frames.size(), first + batch_size);
            for (size_t i = first; i < last; ++i) {
                write_frame(frames[i]);
            }
            out_.appends();
        }
    }

    void write_time_us(int64_t time_ns) { out_.integer(time_ns / 1000); }

    //----------------------------------------------------------------------------------------------
    // [SECTION] segments
    //----------------------------------------------------------------------------------------------

    void write_segments() {
        list(s_.segments.size(), [&](size_t i) {
            const segment& seg = s_.segments[i];
            out_.empty_dict();
            out_.memoize();
            out_.mark();
            key(k_device);
            out_.integer(seg.device);
            key(k_address);
            out_.unsigned_integer(seg.address);
            key(k_total_size);
            out_.unsigned_integer(seg.total_size);
            key(k_allocated_size);
            out_.unsigned_integer(seg.allocated_size);
            key(k_active_size);
            out_.unsigned_integer(seg.active_size);
            key(k_requested_size);
            out_.unsigned_integer(seg.requested_size);
            key(k_stream);
            out_.unsigned_integer(seg.stream);
            key(k_segment_type);
            key(seg.is_large ? k_large : k_small);
            key(k_segment_pool_id);
            out_.unsigned_integer(seg.pool_id_first);
            out_.unsigned_integer(seg.pool_id_second);
            out_.tuple2();
            out_.memoize();
            key(k_is_expandable);
            out_.boolean(seg.is_expandable);
            key(k_frames);
            write_stack(seg.stack);
            if (seg.time_ns != 0) {
                key(k_time_us);
                write_time_us(seg.time_ns);
            }
            key(k_blocks);
            list(seg.blocks.size(), [&](size_t b) { write_block(seg.blocks[b]); });
            out_.setitems();
        });
    }

    void write_block(const block& b) {
        out_.empty_dict();
        out_.memoize();
        out_.mark();
        key(k_address);
        out_.unsigned_integer(b.address);
        key(k_size);
        out_.unsigned_integer(b.size);
        key(k_requested_size);
        out_.unsigned_integer(b.requested_size);
        key(k_state);
        const auto state = static_cast<size_t>(b.state);
        out_.memo_string(block_state_name(b.state), state_memo_[state]);
        key(k_frames);
        write_stack(b.stack);
        if (b.time_ns != 0) {
            key(k_time_us);
            write_time_us(b.time_ns);
        }
        out_.setitems();
    }

    //----------------------------------------------------------------------------------------------
    // [SECTION] traces and annotations
    //----------------------------------------------------------------------------------------------

    void write_traces() {
        // device_traces is indexed by device number: one list per device up to the highest.
        int devices = 0;
        for (const auto& t : s_.traces) {
            devices = std::max(devices, t.device + 1);
        }
        list(static_cast<size_t>(devices), [&](size_t device) {
            const device_trace* trace = s_.find_trace(static_cast<int>(device));
            const size_t count = trace != nullptr ? trace->entries.size() : 0;
            list(count, [&](size_t i) { write_entry(trace->entries[i]); });
        });
    }

    void write_entry(const trace_entry& e) {
        out_.empty_dict();
        out_.memoize();
        out_.mark();
        key(k_action);
        const auto kind = static_cast<size_t>(e.kind);
        out_.memo_string(action_name(e.kind), action_memo_[kind]);
        key(e.kind == action::oom ? k_device_free : k_addr);
        out_.unsigned_integer(e.address);
        key(k_size);
        out_.unsigned_integer(e.size);
        key(k_stream);
        out_.unsigned_integer(e.stream);
        key(k_time_us);
        write_time_us(e.time_ns);
        key(k_compile_context);
        text(e.compile_context);
        key(k_user_metadata);
        text(e.user_metadata);
        key(k_frames);
        write_stack(e.stack);
        if (e.name != no_id) {
            key(k_name);
            text(e.name);
        }
        out_.setitems();
    }

    void write_annotations() {
        list(s_.annotations.size(), [&](size_t i) {
            const annotation& a = s_.annotations[i];
            out_.empty_dict();
            out_.memoize();
            out_.mark();
            key(k_stage);
            key(a.is_start ? k_start : k_end);
            key(k_name);
            text(a.name);
            key(k_device);
            out_.integer(a.device);
            key(k_time_us);
            write_time_us(a.time_ns);
            out_.setitems();
        });
    }

    //----------------------------------------------------------------------------------------------
    // [SECTION] allocator settings
    //----------------------------------------------------------------------------------------------

    void write_settings() {
        const allocator_settings& st = s_.settings;
        out_.empty_dict();
        out_.memoize();
        out_.mark();
        out_.string("PYTORCH_CUDA_ALLOC_CONF");
        out_.string(st.conf);
        out_.string("max_split_size");
        out_.integer(st.max_split_size);
        if (st.max_non_split_rounding_size != allocator_settings{}.max_non_split_rounding_size) {
            out_.string("max_non_split_rounding_size");
            out_.unsigned_integer(st.max_non_split_rounding_size);
        }
        out_.string("garbage_collection_threshold");
        out_.floating(st.garbage_collection_threshold);
        out_.string("expandable_segments");
        out_.boolean(st.expandable_segments);
        for (const auto& [name, value] : st.other) {
            out_.string(name);
            emit_setting_text(out_, value);
        }
        out_.string("roundup_power2_divisions");
        out_.empty_dict();
        out_.memoize();
        out_.mark();
        for (size_t i = 0; i < st.roundup_power2_divisions.size() && i < 64; ++i) {
            out_.string(std::to_string(uint64_t{1} << i));
            out_.unsigned_integer(st.roundup_power2_divisions[i]);
        }
        out_.setitems();
        out_.setitems();
    }

    const snapshot& s_;
    const frames_lists lists_;
    pickle_emitter out_;
    std::array<uint32_t, key_count> key_memo_;
    std::vector<uint32_t> string_memo_;
    std::vector<uint32_t> frame_memo_;
    std::vector<uint32_t> stack_memo_;
    std::array<uint32_t, action_count> action_memo_;
    std::array<uint32_t, 3> state_memo_;
};

}  // namespace

std::vector<uint8_t> write_torch_pickle(const snapshot& s, frames_lists lists) {
    return torch_writer(s, lists).write();
}

void write_torch_pickle(const snapshot& s, const std::filesystem::path& path, frames_lists lists) {
    const auto bytes = write_torch_pickle(s, lists);
    write_output_file(path, bytes);
}

}  // namespace memtrail::snapshot
