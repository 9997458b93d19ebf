#!/usr/bin/env bash
# Everything memtrail shows on a real GPU, in one go, for anyone with an NVIDIA GPU, CUDA and
# PyTorch (no internet needed):
#   tests/gpu/run.sh [BUILD_DIR]        (default build-gpu; built here if it has no binaries)
# Writes under ${OUT:-gpu-results}: the CUDA test suite's log, allocator benchmarks (memtrail
# beside PyTorch's allocator, cudaMallocAsync and cudaMalloc), and freshly recorded PyTorch
# parity traces, with results.md summarising them.
set -u
here=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$here/build-gpu}
out=${OUT:-$here/gpu-results}
shared=${MEMTRAIL_SHARED:-$here/../shared}
python=${PYTHON:-python3}
mkdir -p "$out/traces"
status=0

if [ ! -x "$build/bin/test_core" ]; then
  cmake -S "$here" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DMEMTRAIL_BUILD_VIEWER=OFF \
    -DMEMTRAIL_CUDA=ON && cmake --build "$build" -j "$(nproc)" || exit 2
fi

{
  echo "# memtrail on $(hostname), $(date -u +%Y-%m-%dT%H:%MZ)"
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null
} > "$out/results.md"

# 1. The core suite: the device-independent rules run on the CUDA device as well.
"$build/bin/test_core" --gtest_brief=1 > "$out/test_core.log" 2>&1 || status=1
grep -cE '^\[       OK \].*/cuda' "$out/test_core.log" >/dev/null
echo "- test_core: $(grep -E 'PASSED|FAILED' "$out/test_core.log" | tr '\n' ' ')" >> "$out/results.md"
"$build/bin/test_core" --gtest_filter='*/cuda' > "$out/test_core_cuda.log" 2>&1 || status=1
echo "- CUDA rules: $(grep -E '^\[  (PASSED|FAILED|SKIPPED)' "$out/test_core_cuda.log" | tr '\n' ' ')" >> "$out/results.md"

# 2. Allocator benchmarks (simulated and CUDA device), medians of 5.
"$build/bin/bench_allocator" --benchmark_repetitions=5 --benchmark_report_aggregates_only=true \
  --benchmark_out="$out/bench_allocator.json" --benchmark_out_format=json \
  > "$out/bench_allocator.txt" 2>&1 || status=1
grep median "$out/bench_allocator.txt" | sed 's/^/    /' >> "$out/results.md"

# 3. PyTorch parity traces: every workload under every configuration, a few at a time.
if [ "${SKIP_TRACES:-0}" != 1 ] && [ -f "$shared/tools/torch_parity_traces.py" ]; then
  run_trace() {
    local workload=$1 conf=$2 fraction=${3:-0}
    if [ "$fraction" != 0 ]; then
      FRACTION=$fraction "$python" "$shared/tools/torch_parity_traces.py" "$workload" "$conf" "$out/traces"
    else
      "$python" "$shared/tools/torch_parity_traces.py" "$workload" "$conf" "$out/traces"
    fi
  }
  for workload in transformer dynamic resnet streams; do
    run_trace "$workload" default > "$out/traces/$workload.default.log" 2>&1 &
    run_trace "$workload" roundup_power2_divisions:4 > "$out/traces/$workload.roundup.log" 2>&1 &
    run_trace "$workload" max_split_size_mb:64 > "$out/traces/$workload.split.log" 2>&1 &
    run_trace "$workload" expandable_segments:True > "$out/traces/$workload.expandable.log" 2>&1 &
    run_trace "$workload" garbage_collection_threshold:0.5 0.07 > "$out/traces/$workload.gc.log" 2>&1 &
    wait
  done
  echo "- traces recorded: $(ls "$out/traces"/*.pickle 2>/dev/null | wc -l)" >> "$out/results.md"
fi

# 4. PyTorch's own allocator measured in the same run, for the side-by-side table.
if [ "${SKIP_TORCH_BENCH:-0}" != 1 ] && [ -f "$shared/tools/torch_allocator_bench.py" ]; then
  OUT="$out/torch" PYTHONUNBUFFERED=1 "$python" "$shared/tools/torch_allocator_bench.py" \
    > "$out/torch_bench.log" 2>&1 || status=1
fi
cat "$out/results.md"
exit $status
