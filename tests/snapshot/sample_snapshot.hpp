#pragma once
// A small snapshot that uses every part of the model: two devices, native and Python frames,
// every action, every block state, settings, statistics, annotations, dropped entries, values
// at the edges of their types. The golden file is this snapshot written out.

#include "memtrail/snapshot/model.hpp"

namespace memtrail::snapshot::test {

inline snapshot make_sample_snapshot() {
    snapshot s;
    s.info.producer = "memtrail 0.1.0";
    s.info.host = "gpu-node-7";
    s.info.pid = 4242;
    s.info.time_ns = 1795211106018632123;
    s.info.devices = {
        {0, "NVIDIA H200", 150109880320ull, 9, 0, 132},
        {1, "NVIDIA H200", 150109880320ull, 9, 0, 132},
    };

    s.settings.conf = "expandable_segments:True,max_split_size_mb:512";
    s.settings.max_split_size = 512ll << 20;
    s.settings.garbage_collection_threshold = 0.6;
    s.settings.expandable_segments = true;
    s.settings.roundup_power2_divisions[3] = 4;
    s.settings.other["pinned_num_register_threads"] = "1";
    s.settings.other["release_lock_on_cudamalloc"] = "False";

    s.stats[0] = {{"allocated_bytes.all.current", 33554432}, {"num_ooms", 1}};
    s.stats[1] = {{"allocated_bytes.all.current", 0}, {"reserved_bytes.all.peak", -1}};

    frame native;
    native.kind = frame_kind::native;
    native.function = s.intern_string("c10::cuda::CUDACachingAllocator::malloc(unsigned long)");
    native.filename = s.intern_string("/src/c10/cuda/CUDACachingAllocator.cpp");
    native.line = 1234;
    native.module = s.intern_string("/usr/lib/libc10_cuda.so");
    native.module_offset = 0x1a2b3c;
    native.build_id = s.intern_string("0123456789abcdef0123456789abcdef01234567");
    const frame_id native_id = s.intern_frame(native);

    frame unsymbolized;
    unsymbolized.kind = frame_kind::native;
    unsymbolized.module = native.module;
    unsymbolized.module_offset = 0xdeadbeef;
    const frame_id unsymbolized_id = s.intern_frame(unsymbolized);

    frame python;
    python.kind = frame_kind::python;
    python.function = s.intern_string("forward");
    python.filename = s.intern_string("model.py");
    python.line = 42;
    const frame_id python_id = s.intern_frame(python);
    python.function = s.intern_string("<module>");
    python.line = 7;
    const frame_id module_id = s.intern_frame(python);

    const stack_id alloc_stack = s.intern_stack({native_id, python_id, module_id});
    const stack_id python_stack = s.intern_stack({python_id, module_id});
    const stack_id raw_stack = s.intern_stack({unsymbolized_id});
    const string_id na = s.intern_string("N/A");
    const string_id metadata = s.intern_string("step=3");
    const string_id range = s.intern_string("optimizer.step");

    segment seg;
    seg.device = 0;
    seg.address = 0x7f3a00000000ull;
    seg.total_size = 20971520;
    seg.allocated_size = 2097152;
    seg.active_size = 4194304;
    seg.requested_size = 3000000;
    seg.stream = 0;
    seg.stack = python_stack;
    seg.time_ns = 1795211106000000000;
    seg.blocks = {
        {seg.address, 2097152, 2000000, block_state::active_allocated, alloc_stack,
         1795211106000001000},
        {seg.address + 2097152, 2097152, 1000000, block_state::active_pending_free, python_stack,
         1795211106000002000},
        {seg.address + 4194304, 16777216, 0, block_state::inactive, no_id, 0},
    };
    s.segments.push_back(seg);

    segment small;
    small.device = 1;
    small.address = 0xfffffffffff00000ull;  // near the top of the address space
    small.total_size = 2097152;
    small.stream = 0x5555aaaa5555aaaaull;
    small.is_large = false;
    small.pool_id_first = 1;
    small.pool_id_second = 0xffffffffffffffffull;
    small.blocks = {{small.address, 2097152, 0, block_state::inactive, no_id, 0}};
    s.segments.push_back(small);

    auto& trace0 = s.trace_for(0);
    trace0.dropped = 17;
    const int64_t t0 = 1795211106018632000;
    const auto add = [&](device_trace& t, action kind, uint64_t address, uint64_t size,
                         uint64_t requested, uint64_t stream, int64_t time, stack_id stack) {
        trace_entry e;
        e.kind = kind;
        e.device = t.device;
        e.address = address;
        e.size = size;
        e.requested_size = requested;
        e.stream = stream;
        e.thread = 1;
        e.time_ns = time;
        e.stack = stack;
        e.compile_context = na;
        t.entries.push_back(e);
        return &t.entries.back();
    };
    add(trace0, action::segment_alloc, seg.address, seg.total_size, 0, 0, t0, python_stack);
    add(trace0, action::alloc, seg.address, 2097152, 2000000, 0, t0 + 1500, alloc_stack);
    add(trace0, action::alloc, seg.address + 2097152, 2097152, 1000000, 7, t0 + 2700, alloc_stack)
        ->user_metadata = metadata;
    add(trace0, action::free_requested, seg.address + 2097152, 2097152, 1000000, 7, t0 + 9000,
        python_stack);
    add(trace0, action::snapshot, 0, 0, 0, 0, t0 + 9500, no_id);
    add(trace0, action::oom, 123456789, 1ull << 40, 0, 0, t0 + 10000, raw_stack);
    add(trace0, action::annotation_start, 0, 0, 0, 0, t0 + 11000, no_id)->name = range;
    add(trace0, action::annotation_marker, 0, 0, 0, 0, t0 + 11500, no_id)->name = metadata;
    add(trace0, action::annotation_end, 0, 0, 0, 0, t0 + 12000, no_id)->name = range;
    // An earlier time than the previous entry: deltas must survive going backwards.
    add(trace0, action::segment_map, seg.address, 2097152, 0, 0, t0 - 5, no_id)->thread = 2;
    add(trace0, action::segment_unmap, seg.address, 2097152, 0, 0, t0 + 13000, no_id);

    auto& trace1 = s.trace_for(1);
    add(trace1, action::segment_alloc, small.address, small.total_size, 0, small.stream, t0 + 100,
        no_id);
    add(trace1, action::alloc, small.address, 512, 100, small.stream, t0 + 200, python_stack);
    add(trace1, action::free_completed, small.address, 512, 100, small.stream, t0 + 300,
        python_stack);
    add(trace1, action::segment_free, small.address, small.total_size, 0, small.stream, t0 + 400,
        no_id);

    s.annotations = {
        {true, range, 0, t0 + 11000},
        {false, range, 0, t0 + 12000},
    };
    return s;
}

}  // namespace memtrail::snapshot::test
