// Run: build/bin/bench_snapshot
// Each benchmark reports bytes per event (before compression, tables included) or events/s.

#include <benchmark/benchmark.h>

#include <fstream>
#include <iterator>

#include "memtrail/replay/synthetic_trace.hpp"
#include "memtrail/snapshot/msgpack_format.hpp"
#include "memtrail/snapshot/torch_pickle.hpp"
#include "test_paths.hpp"

namespace ms = memtrail::snapshot;

namespace {

constexpr size_t million = 1'000'000;

const ms::snapshot& synthetic() {
    static const ms::snapshot s = memtrail::replay::make_format_trace(million);
    return s;
}

void set_counters(benchmark::State& state, size_t bytes) {
    state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * million));
    state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * bytes));
    state.counters["bytes_per_event"] = static_cast<double>(bytes) / million;
}

void write_msgpack(benchmark::State& state, ms::compression compress) {
    const auto& s = synthetic();
    size_t bytes = 0;
    for (auto _ : state) {
        const auto out = ms::write_snapshot(s, {compress, 3});
        bytes = out.size();
        benchmark::DoNotOptimize(out.data());
    }
    set_counters(state, bytes);
}

void read_msgpack(benchmark::State& state, ms::compression compress) {
    const auto in = ms::write_snapshot(synthetic(), {compress, 3});
    for (auto _ : state) {
        auto s = ms::read_snapshot(std::span<const uint8_t>(in));
        benchmark::DoNotOptimize(s.traces.data());
    }
    set_counters(state, in.size());
}

void BM_write_msgpack_1M(benchmark::State& state) {
    write_msgpack(state, ms::compression::none);
}
void BM_read_msgpack_1M(benchmark::State& state) {
    read_msgpack(state, ms::compression::none);
}
void BM_write_msgpack_zstd_1M(benchmark::State& state) {
    write_msgpack(state, ms::compression::zstd);
}
void BM_read_msgpack_zstd_1M(benchmark::State& state) {
    read_msgpack(state, ms::compression::zstd);
}

void BM_write_torch_pickle_1M(benchmark::State& state) {
    const auto& s = synthetic();
    size_t bytes = 0;
    for (auto _ : state) {
        const auto out = ms::write_torch_pickle(s);
        bytes = out.size();
        benchmark::DoNotOptimize(out.data());
    }
    set_counters(state, bytes);
}

void BM_read_torch_pickle_1M(benchmark::State& state) {
    const auto in = ms::write_torch_pickle(synthetic());
    for (auto _ : state) {
        auto s = ms::read_torch_pickle(std::span<const uint8_t>(in));
        benchmark::DoNotOptimize(s.traces.data());
    }
    set_counters(state, in.size());
}

// PyTorch's own 1 MB transformer snapshot (10983 trace entries, 105 segments).
void BM_read_torch_pickle_transformer(benchmark::State& state) {
    std::ifstream file(ms::test::anchor("transformer__default.pickle"), std::ios::binary);
    const std::vector<uint8_t> in{std::istreambuf_iterator<char>(file),
                                  std::istreambuf_iterator<char>()};
    if (in.empty()) {
        state.SkipWithError("anchor transformer__default.pickle not found");
        return;
    }
    for (auto _ : state) {
        auto s = ms::read_torch_pickle(std::span<const uint8_t>(in));
        benchmark::DoNotOptimize(s.traces.data());
    }
    state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * in.size()));
}

}  // namespace

BENCHMARK(BM_write_msgpack_1M)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_read_msgpack_1M)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_write_msgpack_zstd_1M)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_read_msgpack_zstd_1M)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_write_torch_pickle_1M)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_read_torch_pickle_1M)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_read_torch_pickle_transformer)->Unit(benchmark::kMillisecond);

BENCHMARK_MAIN();
