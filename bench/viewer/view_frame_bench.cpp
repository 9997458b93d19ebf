// CPU time to build one frame of each view (ImGui draw lists only, no GL) on a trace of 10M
// events: the budget is 16 ms, one frame at 60 Hz. The trace is recorded from a random workload
// on a simulated device (recorder without stack capture, for speed), then given synthetic stacks
// so the flame graphs have something to aggregate.
//
//   build/bin/viewer_bench [--benchmark_filter=...]
//   MEMTRAIL_BENCH_EVENTS=1000000 build/bin/viewer_bench   (a smaller trace)
//
// Steady-state frames are measured: results the views compute in the background (flame graphs,
// the comparison) are waited for before timing. view_frame/timeline_panning and
// view_frame/timeline_zooming change the visible range every frame, so the timeline rebuilds its
// per-pixel geometry each time; view_frame/segments_stepping and view_frame/timeline_stepping
// (stacked by category, with its legend at the moment) move the moment every frame.

#include <benchmark/benchmark.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "memtrail/core/caching_allocator.hpp"
#include "memtrail/core/simulated_device.hpp"
#include "memtrail/recorder/recorder.hpp"
#include "memtrail/viewer/document.hpp"
#include "memtrail/viewer/headless_frame.hpp"
#include "memtrail/viewer/view.hpp"

namespace {

using memtrail::viewer::view;
using memtrail::viewer::view_kind;

constexpr int width = 1600;
constexpr int height = 900;

size_t wanted_events() {
    const char* text = std::getenv("MEMTRAIL_BENCH_EVENTS");
    return text != nullptr ? std::strtoull(text, nullptr, 10) : 10'000'000;
}

// Synthetic stacks: a few hundred distinct stacks over a small vocabulary of frames, assigned
// by request size so the same kind of allocation always comes from the same place.
void add_synthetic_stacks(memtrail::snapshot::snapshot& s) {
    namespace snap = memtrail::snapshot;
    const char* functions[] = {"main",       "train",      "train_step", "forward",   "backward",
                               "attention",  "mlp",        "layer_norm", "embedding", "optimizer",
                               "all_reduce", "matmul",     "softmax",    "dropout",   "linear",
                               "conv2d",     "batch_norm", "relu",       "loss",      "checkpoint"};
    std::mt19937_64 random(7);
    std::vector<snap::stack_id> stacks;
    for (int i = 0; i < 300; ++i) {
        std::vector<snap::frame_id> frames;
        const int depth = 6 + static_cast<int>(random() % 10);
        for (int d = depth - 1; d >= 0; --d) {  // innermost first
            snap::frame f;
            const size_t pick = d < 3 ? static_cast<size_t>(d) : 3 + random() % 17;
            f.function = s.intern_string(functions[pick]);
            f.filename = s.intern_string("model.py");
            f.line = static_cast<uint32_t>(10 + pick * 7 + static_cast<size_t>(d));
            f.kind = snap::frame_kind::python;
            frames.push_back(s.intern_frame(f));
        }
        stacks.push_back(s.intern_stack(frames));
    }
    std::unordered_map<uint64_t, snap::stack_id> by_address;
    for (snap::device_trace& trace : s.traces) {
        for (snap::trace_entry& e : trace.entries) {
            if (e.kind == snap::action::alloc) {
                e.stack = stacks[(e.requested_size * 2654435761u >> 9) % stacks.size()];
                by_address[e.address] = e.stack;
            } else if (e.kind == snap::action::free_requested ||
                       e.kind == snap::action::free_completed) {
                e.stack = by_address[e.address];
            }
        }
    }
    for (snap::segment& seg : s.segments) {
        for (snap::block& b : seg.blocks) {
            if (b.state != snap::block_state::inactive) {
                b.stack = by_address[b.address];
            }
        }
    }
}

// A random mix of allocations from 512 B to 64 MiB with about 2000 live at a time, annotated
// every 100k events, ending in an OOM.
std::shared_ptr<const memtrail::viewer::document> make_document() {
    const size_t events = wanted_events();
    memtrail::simulated_device gpu;
    memtrail::caching_allocator allocator({&gpu});
    memtrail::recorder::recorder history(allocator);
    memtrail::recorder::history_options options;
    options.context = memtrail::recorder::context_mode::none;
    options.max_entries = events + events / 10;
    history.record_memory_history(options);

    std::mt19937_64 random(1);
    std::vector<uint64_t> live;
    size_t approx = 0;  // an alloc and its free make three entries, segments a few more
    int step = 0;
    while (approx < events) {
        if (approx / 100'000 >= static_cast<size_t>(step)) {
            if (step > 0) {
                history.range_end("step " + std::to_string(step - 1));
            }
            history.range_start("step " + std::to_string(step));
            ++step;
        }
        if (live.size() < 1000 || (live.size() < 3000 && random() % 2 == 0)) {
            const double exponent = 9.0 + static_cast<double>(random() % 1700) / 100.0;
            live.push_back(history.allocate(static_cast<uint64_t>(std::exp2(exponent)), 0,
                                            random() % 8 == 0 ? 7 : 0));
            approx += 1;
        } else {
            const size_t i = random() % live.size();
            history.free(live[i]);
            live[i] = live.back();
            live.pop_back();
            approx += 2;
        }
    }
    history.range_end("step " + std::to_string(step - 1));
    gpu.set_capacity(1ull << 30);
    try {
        history.allocate(4ull << 30, 0);
    } catch (const memtrail::out_of_memory_error&) {
        // The OOM entry is what the OOM view shows.
    }
    auto snapshot = std::make_shared<memtrail::snapshot::snapshot>(history.take_snapshot());
    add_synthetic_stacks(*snapshot);
    memtrail::viewer::load_progress progress;
    return memtrail::viewer::make_document(std::move(snapshot), "bench", progress);
}

const std::shared_ptr<const memtrail::viewer::document>& bench_document() {
    static const auto doc = [] {
        const auto start = std::chrono::steady_clock::now();
        auto d = make_document();
        std::fprintf(
            stderr, "viewer_bench: %zu events, document built in %.1f s\n",
            d->devices.front().model.event_count(),
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
        return d;
    }();
    return doc;
}

void draw_frame(memtrail::viewer::headless_frame& frame, view& v) {
    frame.begin();
    ImGui::SetNextWindowPos(ImVec2(0, 0));
    ImGui::SetNextWindowSize(ImGui::GetIO().DisplaySize);
    ImGui::Begin("view", nullptr, ImGuiWindowFlags_NoDecoration);
    v.draw();
    ImGui::End();
}

// Frames until background results have arrived and been drawn (two quiet frames).
void settle(memtrail::viewer::headless_frame& frame, view& v) {
    int quiet = 0;
    for (int i = 0;; ++i) {
        draw_frame(frame, v);
        quiet = v.busy() ? 0 : quiet + 1;
        frame.end();
        if (i >= 3 && quiet >= 2) {
            return;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
}

void view_frame(benchmark::State& state, view_kind kind) {
    const auto& doc = bench_document();
    memtrail::viewer::headless_frame frame(width, height);
    view v(doc);
    v.show(kind);
    v.select_moment("peak");
    if (kind == view_kind::compare) {
        v.set_comparison(doc);
    }
    if (kind == view_kind::allocation) {
        v.set_allocation(doc->devices.front().model.lifetimes().size() / 2);
    }
    settle(frame, v);
    int vertices = 0;
    for (auto _ : state) {
        draw_frame(frame, v);
        vertices = frame.end().TotalVtxCount;
    }
    state.counters["vertices"] = vertices;
}

// Drags the zoomed-in timeline a few pixels each frame: every frame recomputes the curves and
// the bands of the largest allocations for the new range.
void timeline_panning(benchmark::State& state) {
    const auto& doc = bench_document();
    memtrail::viewer::headless_frame frame(width, height);
    view v(doc);
    v.show(view_kind::timeline);
    settle(frame, v);
    ImGuiIO& io = ImGui::GetIO();
    const ImVec2 plot(width / 2.0f, height * 0.6f);
    io.MousePos = plot;
    io.MouseWheel = 6;  // zoom in about 4x around the middle
    draw_frame(frame, v);
    frame.end();
    io.MouseWheel = 0;
    io.MouseDown[0] = true;
    float offset = 0;
    for (auto _ : state) {
        offset = offset > 0 ? -8.0f : 8.0f;
        io.MousePos = ImVec2(plot.x + offset, plot.y);
        draw_frame(frame, v);
        frame.end();
    }
    io.MouseDown[0] = false;
}

// One wheel step in or out every frame: each frame chooses the largest allocations of its new
// range, which looks at every allocation of the trace.
void timeline_zooming(benchmark::State& state) {
    const auto& doc = bench_document();
    memtrail::viewer::headless_frame frame(width, height);
    view v(doc);
    v.show(view_kind::timeline);
    settle(frame, v);
    ImGuiIO& io = ImGui::GetIO();
    io.MousePos = ImVec2(width / 2.0f, height * 0.6f);
    float wheel = 0;
    for (auto _ : state) {
        wheel = wheel > 0 ? -1.0f : 1.0f;
        io.MouseWheel = wheel;
        draw_frame(frame, v);
        frame.end();
    }
    io.MouseWheel = 0;
}

// One event further each frame from the peak (the arrow keys), in `kind`'s view.
void step_each_frame(benchmark::State& state, view_kind kind, const char* stacking) {
    const auto& doc = bench_document();
    memtrail::viewer::headless_frame frame(width, height);
    view v(doc);
    v.show(kind);
    if (stacking != nullptr) {
        v.stack_timeline_by(stacking);
    }
    v.select_moment("peak");
    settle(frame, v);
    for (auto _ : state) {
        v.set_moment(v.moment() + 1);
        draw_frame(frame, v);
        frame.end();
    }
}

// The segments map: every frame rebuilds the allocator state at the new moment from the
// nearest checkpoint.
void segments_stepping(benchmark::State& state) {
    step_each_frame(state, view_kind::segments, nullptr);
}

// The timeline stacked by category: its legend gives each category's bytes at the moment, so
// every frame finds the allocations live there.
void timeline_stepping(benchmark::State& state) {
    step_each_frame(state, view_kind::timeline, "category");
}

void register_benchmarks() {
    for (int i = 0; i < memtrail::viewer::view_kind_count; ++i) {
        const auto kind = static_cast<view_kind>(i);
        const std::string name =
            "view_frame/" + std::string(memtrail::viewer::view_kind_name(kind));
        benchmark::RegisterBenchmark(name.c_str(), view_frame, kind)
            ->Unit(benchmark::kMillisecond)
            ->MinTime(0.5);
    }
    benchmark::RegisterBenchmark("view_frame/timeline_panning", timeline_panning)
        ->Unit(benchmark::kMillisecond)
        ->MinTime(0.5);
    benchmark::RegisterBenchmark("view_frame/timeline_zooming", timeline_zooming)
        ->Unit(benchmark::kMillisecond)
        ->MinTime(0.5);
    benchmark::RegisterBenchmark("view_frame/segments_stepping", segments_stepping)
        ->Unit(benchmark::kMillisecond)
        ->MinTime(0.5);
    benchmark::RegisterBenchmark("view_frame/timeline_stepping", timeline_stepping)
        ->Unit(benchmark::kMillisecond)
        ->MinTime(0.5);
}

}  // namespace

int main(int argc, char** argv) {
    register_benchmarks();
    benchmark::Initialize(&argc, argv);
    if (benchmark::ReportUnrecognizedArguments(argc, argv)) {
        return 1;
    }
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    return 0;
}
