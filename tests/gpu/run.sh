#!/usr/bin/env bash
# Everything memtrail shows on a real GPU, in one go, for anyone with an NVIDIA GPU, CUDA and
# PyTorch (no internet needed):
#   tests/gpu/run.sh [BUILD_DIR]        (default build-gpu; configured and built here if it has no
#                                        binaries; Release, CUDA on, libtorch found through python3)
# Writes under ${OUT:-gpu-results} the logs of each part and results.md summarising them:
#   1. the core test suite (device rules on the CUDA device; the two-GPU tests where two are seen)
#   2. the samples: a CUDA program recording its history, and the post-mortem OOM sample run until
#      the GPU is full with MEMTRAIL_OOM_DUMP set, then `memtrail oom` on the snapshot it left
#   3. the side-by-side benchmarks: memtrail, PyTorch's caching allocator, cudaMallocAsync and
#      cudaMalloc, 1-8 threads, and recording against PyTorch's _record_memory_history
#   4. PyTorch training on memtrail (tests/gpu/torch_training.py)
#   5. torch.distributed with a snapshot per rank (tests/gpu/torch_distributed.py; two GPUs or more)
#   6. CUDA graphs on memtrail: torch.cuda.graph training and torch.compile(mode="reduce-overhead")
#      (tests/gpu/torch_graphs.py, with libmemtrail_torch_bridge.so)
#   7. fresh PyTorch parity traces (with ../shared/tools/torch_parity_traces.py, when present)
# Set SKIP_<PART>=1 (SKIP_TESTS, SKIP_SAMPLES, SKIP_BENCH, SKIP_TRAINING, SKIP_DISTRIBUTED,
# SKIP_GRAPHS, SKIP_TRACES) to leave a part out, BENCH_ARGS to pass Google Benchmark flags.
set -u
here=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$here/build-gpu}
out=${OUT:-$here/gpu-results}
shared=${MEMTRAIL_SHARED:-$here/../shared}
python=${PYTHON:-python3}
mkdir -p "$out"
status=0
torch_dir=$("$python" -c 'import os, torch; print(os.path.dirname(torch.__file__))' 2>/dev/null)
gpus=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | wc -l)
skip() { [ "$(eval echo "\${SKIP_$1:-0}")" = 1 ]; }
note() { echo "$*" >> "$out/results.md"; }
fail() { note "- **FAILED**: $*"; status=1; }

if [ ! -x "$build/bin/test_core" ]; then
  cmake -S "$here" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DMEMTRAIL_BUILD_VIEWER=OFF \
    -DMEMTRAIL_CUDA=ON ${torch_dir:+-DMEMTRAIL_TORCH_DIR="$torch_dir"} &&
    cmake --build "$build" -j "$(nproc)" || exit 2
fi
# libtorch's headers include the CUDA runtime's, crt/ included: the toolkit's, wherever it is.
cuda_include_dir() {
  local nvcc_root host_config
  nvcc_root=$(dirname "$(dirname "$(command -v nvcc 2>/dev/null || echo /usr/local/cuda/bin/nvcc)")")
  host_config=$(find "$nvcc_root" /usr/local/cuda* "$torch_dir/.." -path '*include/crt/host_config.h' \
    2>/dev/null | head -1)
  dirname "$(dirname "$host_config")"
}
# A build made elsewhere (without libtorch) gets PyTorch's side of the benchmark built here.
torch_library=$build/lib/libmemtrail_torch_allocator.so
if [ ! -f "$torch_library" ] && [ -n "$torch_dir" ]; then
  cuda_include=$(cuda_include_dir)
  mkdir -p "$build/lib"
  ${CXX:-c++} -std=c++20 -O2 -shared -fPIC -D_GLIBCXX_USE_CXX11_ABI=1 -isystem "$torch_dir/include" \
    -isystem "$cuda_include" "$here/bench/gpu/torch_allocator.cpp" -o "$torch_library" \
    -L"$torch_dir/lib" -ltorch_cuda -ltorch_cpu -lc10_cuda -lc10 -Wl,-rpath,"$torch_dir/lib" \
    -Wl,--allow-shlib-undefined > "$out/torch_allocator_build.log" 2>&1 ||
    fail "building libmemtrail_torch_allocator.so (see torch_allocator_build.log)"
fi
# The same for the torch bridge (recorder/src/torch_bridge), beside librecorder.so.
bridge_library=$build/lib/libmemtrail_torch_bridge.so
if [ ! -f "$bridge_library" ] && [ -n "$torch_dir" ]; then
  cuda_include=$(cuda_include_dir)
  ${CXX:-c++} -std=c++20 -O2 -shared -fPIC -fvisibility=hidden -D_GLIBCXX_USE_CXX11_ABI=1 \
    -isystem "$torch_dir/include" -isystem "$torch_dir/include/torch/csrc/api/include" \
    -isystem "$cuda_include" -I"$here/recorder/include" -I"$build/include" \
    "$here/recorder/src/torch_bridge/torch_bridge.cpp" -o "$bridge_library" \
    -L"$build/lib" -lrecorder -L"$torch_dir/lib" -ltorch_cuda -ltorch_cpu -lc10_cuda -lc10 \
    -Wl,-rpath,"$torch_dir/lib" -Wl,-rpath,'$ORIGIN' -Wl,--allow-shlib-undefined \
    > "$out/torch_bridge_build.log" 2>&1 ||
    fail "building libmemtrail_torch_bridge.so (see torch_bridge_build.log)"
fi

{
  echo "# memtrail on $(hostname), $(date -u +%Y-%m-%dT%H:%MZ)"
  echo
  nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader 2>/dev/null |
    sed 's/^/- GPU /'
  echo "- CPU: $(lscpu 2>/dev/null | sed -n 's/^Model name: *//p')"
  echo "- torch: $("$python" -c 'import torch; print(torch.__version__)' 2>/dev/null)"
  echo
} > "$out/results.md"

if ! skip TESTS; then
  "$build/bin/test_core" --gtest_brief=1 > "$out/test_core.log" 2>&1 || fail "test_core"
  note "- test_core: $(grep -E '^\[  (PASSED|FAILED)' "$out/test_core.log" | tr '\n' ' ')"
  "$build/bin/test_core" --gtest_filter='*/cuda:TwoGpus.*' > "$out/test_core_gpu.log" 2>&1 ||
    fail "test_core on the GPU"
  note "- on the GPU: $(grep -E '^\[  (PASSED|FAILED|SKIPPED)' "$out/test_core_gpu.log" | tr '\n' ' ')"
fi

if ! skip SAMPLES; then
  MEMTRAIL_RECORD=all MEMTRAIL_DEVICE=cuda "$build/bin/sample_cuda_program" "$out/cuda_sample.memtrail" \
    > "$out/cuda_sample.log" 2>&1 || fail "sample_cuda_program"
  "$build/bin/memtrail" summary "$out/cuda_sample.memtrail" --abbreviated > "$out/cuda_sample_summary.txt" 2>&1 ||
    fail "memtrail summary of the CUDA sample"
  note "- CUDA sample: $(tail -1 "$out/cuda_sample.log")"
  rm -f "$out"/oom-*.memtrail
  MEMTRAIL_DEVICE=cuda MEMTRAIL_OOM_DUMP="$out/oom-%p-device%d.memtrail" "$build/bin/sample_oom_post_mortem" \
    > "$out/oom_sample.log" 2>&1
  oom_snapshot=$(ls "$out"/oom-*.memtrail 2>/dev/null | head -1)
  if [ -n "$oom_snapshot" ] && "$build/bin/memtrail" oom "$oom_snapshot" > "$out/oom_report.txt" 2>&1; then
    note "- OOM post-mortem: $(basename "$oom_snapshot"); memtrail oom: $(grep -m1 -i 'verdict' "$out/oom_report.txt")"
  else
    fail "OOM post-mortem (see oom_sample.log, oom_report.txt)"
  fi
fi

if ! skip BENCH; then
  MEMTRAIL_TORCH_ALLOCATOR=$torch_library "$build/bin/bench_side_by_side" \
    ${BENCH_ARGS:---benchmark_min_time=0.2 --benchmark_repetitions=5 --benchmark_enable_random_interleaving=true --benchmark_report_aggregates_only=true} \
    --benchmark_out="$out/bench_side_by_side.json" --benchmark_out_format=json \
    > "$out/bench_side_by_side.txt" 2>&1 || fail "bench_side_by_side"
  "$python" "$here/tests/gpu/bench_table.py" "$out/bench_side_by_side.json" >> "$out/results.md" ||
    fail "bench_table.py"
fi

if ! skip TRAINING; then
  PYTHONUNBUFFERED=1 "$python" "$here/tests/gpu/torch_training.py" "$build/lib/librecorder.so" \
    "$build/bin/memtrail" "$out/training" > "$out/training.log" 2>&1 || fail "torch_training.py"
  note ""
  note "## PyTorch training"
  note '```'
  cat "$out/training.log" >> "$out/results.md"
  note '```'
fi

if ! skip DISTRIBUTED; then
  if [ "$gpus" -ge 2 ]; then
    PYTHONUNBUFFERED=1 "$python" "$here/tests/gpu/torch_distributed.py" "$build/lib/librecorder.so" \
      "$build/bin/memtrail" "$out/distributed" > "$out/distributed.log" 2>&1 || fail "torch_distributed.py"
    note ""
    note "## torch.distributed, one snapshot per rank"
    note '```'
    cat "$out/distributed.log" >> "$out/results.md"
    note '```'
  else
    note "- torch.distributed: left out ($gpus GPU visible, needs 2)"
  fi
fi

if ! skip GRAPHS; then
  PYTHONUNBUFFERED=1 "$python" "$here/tests/gpu/torch_graphs.py" "$build/lib/librecorder.so" \
    "$out/graphs" > "$out/graphs.log" 2>&1 || fail "torch_graphs.py"
  note ""
  note "## CUDA graphs on memtrail"
  note '```'
  cat "$out/graphs.log" >> "$out/results.md"
  note '```'
fi

if ! skip TRACES && [ -f "$shared/tools/torch_parity_traces.py" ]; then
  mkdir -p "$out/traces"
  run_trace() {
    local workload=$1 conf=$2 fraction=${3:-0}
    FRACTION=$fraction "$python" "$shared/tools/torch_parity_traces.py" "$workload" "$conf" "$out/traces"
  }
  for workload in transformer dynamic resnet streams; do
    run_trace "$workload" default > "$out/traces/$workload.default.log" 2>&1 &
    run_trace "$workload" roundup_power2_divisions:4 > "$out/traces/$workload.roundup.log" 2>&1 &
    run_trace "$workload" max_split_size_mb:64 > "$out/traces/$workload.split.log" 2>&1 &
    run_trace "$workload" expandable_segments:True > "$out/traces/$workload.expandable.log" 2>&1 &
    run_trace "$workload" garbage_collection_threshold:0.5 0.07 > "$out/traces/$workload.gc.log" 2>&1 &
    wait
  done
  note "- parity traces recorded: $(ls "$out/traces"/*.pickle 2>/dev/null | wc -l)"
fi

cat "$out/results.md"
exit $status
