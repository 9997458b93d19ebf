// Memory by meaning at scale: classifying every allocation of a 1M-entry trace, the categories at
// a random moment, and the per-pixel stacked timelines the viewer draws (by category, by stack,
// by segment), on replay::make_stacked_history's synthetic trace with its stacks given the frames
// of a PyTorch training loop (module setup, forward, optimizer, and none for autograd's worker).
//
//   build/bin/bench_categories
//   MEMTRAIL_BENCH_EVENTS=10000000 build/bin/bench_categories

#include <benchmark/benchmark.h>

#include <cstdlib>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "memtrail/analysis/categories.hpp"
#include "memtrail/analysis/stacked_timeline.hpp"
#include "memtrail/replay/synthetic_trace.hpp"

namespace {

using namespace memtrail;

size_t event_count() {
    const char* text = std::getenv("MEMTRAIL_BENCH_EVENTS");
    return text != nullptr ? std::stoull(text) : 1'000'000;
}

// The synthetic trace with each of its stacks replaced by one of a training loop's.
std::shared_ptr<snapshot::snapshot> training_like_snapshot(size_t entries) {
    auto snap = std::make_shared<snapshot::snapshot>(replay::make_stacked_history(entries));
    auto stack = [&](std::vector<std::pair<const char*, const char*>> frames) {
        std::vector<snapshot::frame_id> ids;
        for (const auto& [function, file] : frames) {
            snapshot::frame f;
            f.function = snap->intern_string(function);
            f.filename = snap->intern_string(file);
            f.line = 1;
            f.kind = snapshot::frame_kind::python;
            ids.push_back(snap->intern_frame(f));
        }
        return snap->intern_stack(ids);
    };
    const char* module_py = "torch/nn/modules/module.py";
    const std::vector<snapshot::stack_id> loop = {
        stack({{"_apply", module_py}, {"cuda", module_py}, {"main", "train.py"}}),
        stack({{"forward", "torch/nn/modules/linear.py"},
               {"_call_impl", module_py},
               {"main", "train.py"}}),
        stack({{"dropout", "torch/nn/functional.py"},
               {"forward", "model.py"},
               {"_call_impl", module_py},
               {"main", "train.py"}}),
        snapshot::no_id,  // autograd's worker
        stack({{"_init_group", "torch/optim/adam.py"},
               {"step", "torch/optim/adam.py"},
               {"main", "train.py"}}),
        stack({{"_multi_tensor_adam", "torch/optim/adam.py"},
               {"step", "torch/optim/adam.py"},
               {"main", "train.py"}}),
        stack({{"zero_grad", "torch/optim/optimizer.py"}, {"main", "train.py"}}),
        stack({{"main", "train.py"}}),
    };
    for (auto& e : snap->trace_for(0).entries) {
        if (e.stack != snapshot::no_id) {
            e.stack = loop[e.stack % loop.size()];
        }
    }
    return snap;
}

const analysis::device_model& model() {
    static const analysis::device_model built =
        analysis::device_model::build(training_like_snapshot(event_count()), 0);
    return built;
}

const analysis::category_map& categories() {
    static const analysis::category_map map = analysis::category_map::build(model());
    return map;
}

std::vector<analysis::column_span> pixel_columns(size_t pixels) {
    const size_t positions = model().event_count() + 1;
    std::vector<analysis::column_span> out;
    for (size_t i = 0; i < pixels; ++i) {
        out.push_back({positions * i / pixels,
                       std::max(positions * (i + 1) / pixels, positions * i / pixels + 1)});
    }
    return out;
}

void categories_build(benchmark::State& state) {
    const analysis::device_model& m = model();
    for (auto _ : state) {
        benchmark::DoNotOptimize(analysis::category_map::build(m));
    }
    state.counters["entries"] = static_cast<double>(m.event_count());
    state.counters["allocations"] = static_cast<double>(m.lifetimes().size());
    state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(m.event_count()));
}
BENCHMARK(categories_build)->Unit(benchmark::kMillisecond);

void categories_at_random_moment(benchmark::State& state) {
    std::mt19937_64 random(3);
    for (auto _ : state) {
        benchmark::DoNotOptimize(
            analysis::categories_at(model(), categories(), random() % model().event_count()));
    }
}
BENCHMARK(categories_at_random_moment)->Unit(benchmark::kMillisecond);

void stacked_by_category_4k_pixels(benchmark::State& state) {
    const auto columns = pixel_columns(4096);
    for (auto _ : state) {
        benchmark::DoNotOptimize(analysis::stack_allocations(
            model(), categories(), analysis::stack_key::category, columns, true, 0));
    }
}
BENCHMARK(stacked_by_category_4k_pixels)->Unit(benchmark::kMillisecond);

void stacked_by_stack_4k_pixels(benchmark::State& state) {
    const auto columns = pixel_columns(4096);
    for (auto _ : state) {
        benchmark::DoNotOptimize(analysis::stack_allocations(
            model(), categories(), analysis::stack_key::stack, columns, true, 32));
    }
}
BENCHMARK(stacked_by_stack_4k_pixels)->Unit(benchmark::kMillisecond);

void segments_over_time_4k_pixels(benchmark::State& state) {
    const auto columns = pixel_columns(4096);
    for (auto _ : state) {
        benchmark::DoNotOptimize(
            analysis::segments_over_time(model(), categories(), columns, true));
    }
}
BENCHMARK(segments_over_time_4k_pixels)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
