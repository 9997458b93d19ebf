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
#   6. fresh PyTorch parity traces (with ../shared/tools/torch_parity_traces.py, when present)
#   7. `memtrail run` on unchanged programs, in cache and observe mode, timed against the program
#      alone: a CUDA sample built with nvcc's defaults (static runtime), a cuBLAS sample (observe
#      must show cuBLAS's workspace), and tests/gpu/torch_training.py's PyTorch-allocator child
#   8. the Python package (python/), pip-installed into a virtual environment: a training loop
#      after memtrail.torch.use() against PyTorch's allocator, gc.collect on memory pressure,
#      CuPy through the package where CuPy is installed (tests/gpu/python_package.py)
#   9. CUDA graphs on memtrail: torch.cuda.graph training and torch.compile(mode="reduce-overhead")
#      (tests/gpu/torch_graphs.py, with libmemtrail_torch_bridge.so)
#  10. the cost of recording inside training: 6 alternating processes of PyTorch's allocator and
#      of memtrail recording everything, with each unwinder (tests/gpu/training_overhead.py)
#  11. the jobs people run, recorded with the models' own numbers (tests/gpu/record_job_traces.py:
#      FSDP and DDP where two GPUs are seen, generate() always), and memory by meaning set beside
#      those numbers (tests/gpu/categories_truth.py)
# Set SKIP_<PART>=1 (SKIP_TESTS, SKIP_SAMPLES, SKIP_BENCH, SKIP_TRAINING, SKIP_DISTRIBUTED,
# SKIP_TRACES, SKIP_RUN, SKIP_PYTHON_PACKAGE, SKIP_GRAPHS, SKIP_OVERHEAD, SKIP_JOBS) to leave a part out,
# BENCH_ARGS to pass Google Benchmark flags; OVERHEAD_RUNS, OVERHEAD_UNWINDERS and OVERHEAD_MODES
# for part 10 (see training_overhead.py).
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
# The same for the torch bridge (librecorder/src/torch_bridge), beside librecorder.so.
bridge_library=$build/lib/libmemtrail_torch_bridge.so
if [ ! -f "$bridge_library" ] && [ -n "$torch_dir" ]; then
  cuda_include=$(cuda_include_dir)
  ${CXX:-c++} -std=c++20 -O2 -shared -fPIC -fvisibility=hidden -D_GLIBCXX_USE_CXX11_ABI=1 \
    -isystem "$torch_dir/include" -isystem "$torch_dir/include/torch/csrc/api/include" \
    -isystem "$cuda_include" -I"$here/librecorder/include" -I"$build/include" \
    "$here/librecorder/src/torch_bridge/torch_bridge.cpp" -o "$bridge_library" \
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

if ! skip OVERHEAD; then
  # Recording inside training: 6 alternating processes of each, with each unwinder.
  note ""
  note "## Recording inside training (context all, stacks all)"
  note '```'
  for unwinder in ${OVERHEAD_UNWINDERS:-eh_frame libunwind}; do
    PYTHONUNBUFFERED=1 "$python" "$here/tests/gpu/training_overhead.py" "$build/lib/librecorder.so" \
      "$out/overhead.$unwinder" "${OVERHEAD_RUNS:-6}" "$unwinder" "${OVERHEAD_MODES:-memtrail_all}" \
      > "$out/overhead.$unwinder.log" 2>&1 || fail "training_overhead.py ($unwinder)"
    grep median "$out/overhead.$unwinder.log" >> "$out/results.md"
  done
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

if ! skip RUN; then
  mkdir -p "$out/run"
  note ""
  note "## memtrail run, against the program alone"
  note ""
  note "| program | alone | cache | observe | notes |"
  note "|---|---|---|---|---|"
  # Wall time of a command in seconds (milliseconds kept), its output in run/errors.log.
  seconds() { local start=$(date +%s%N); "$@" > /dev/null 2>> "$out/run/errors.log"; local rc=$?;
              local ms=$(( ($(date +%s%N) - start) / 1000000 )); printf '%d.%03d' $((ms / 1000)) $((ms % 1000));
              return $rc; }
  nvcc -O2 -g "$here/tests/gpu/run_static_sample.cu" -o "$out/run/static_sample" > "$out/run/build.log" 2>&1 &&
    nvcc -O2 -g "$here/tests/gpu/run_cublas_sample.cu" -lcublas -o "$out/run/cublas_sample" >> "$out/run/build.log" 2>&1 ||
    fail "building the memtrail run samples (see run/build.log)"
  for sample in static_sample cublas_sample; do
    [ -x "$out/run/$sample" ] || continue
    alone=$(seconds "$out/run/$sample") || fail "$sample alone"
    declare -A took=()
    for mode in cache observe; do
      snapshot="$out/run/$sample.$mode.memtrail"
      took[$mode]=$(seconds "$build/bin/memtrail" run --mode "$mode" --dump "$snapshot" -- "$out/run/$sample") ||
        fail "memtrail run --mode $mode $sample"
      # At the peak: a library may give its workspace back before the program exits.
      "$build/bin/memtrail" top "$snapshot" --at peak -n 20 > "$out/run/$sample.$mode.top.txt" 2>&1 ||
        fail "memtrail top on $sample ($mode)"
    done
    notes=""
    if [ "$sample" = cublas_sample ]; then
      if grep -q "libcublas" "$out/run/$sample.observe.top.txt"; then
        notes="observe shows cuBLAS's own allocations (its workspace; run/$sample.observe.top.txt)"
      else
        fail "observe mode does not show cuBLAS's workspace (run/$sample.observe.top.txt)"
      fi
    fi
    note "| $sample | ${alone}s | ${took[cache]}s | ${took[observe]}s | $notes |"
  done
  if [ -n "$torch_dir" ]; then
    # torch_training.py's child with PyTorch's allocator: unchanged, memtrail run makes it use
    # memtrail's (cache) or records PyTorch's own (observe).
    child() { local log=$1; shift
              PYTHONUNBUFFERED=1 "$@" "$python" "$here/tests/gpu/torch_training.py" --child torch \
                "$build/lib/librecorder.so" "$out/run/unused.memtrail" 2>&1 | tee "$out/run/$log.log" |
                grep '^{' | tail -1; }
    step_ms() { "$python" -c 'import json, sys; print(json.loads(sys.stdin.read())["step_ms_median"])'; }
    alone=$(child torch.alone env | step_ms) || fail "torch_training.py child alone"
    cache=$(child torch.cache "$build/bin/memtrail" run --mode cache --dump "$out/run/torch.cache.memtrail" -- | step_ms) ||
      fail "memtrail run python torch_training.py (cache)"
    observe=$(child torch.observe "$build/bin/memtrail" run --mode observe --dump "$out/run/torch.observe.memtrail" -- | step_ms) ||
      fail "memtrail run python torch_training.py (observe)"
    "$build/bin/memtrail" top "$out/run/torch.cache.memtrail" -n 5 --depth 200 > "$out/run/torch.cache.top.txt" 2>&1 ||
      fail "memtrail top on the PyTorch run"
    grep -q "torch_training.py:" "$out/run/torch.cache.top.txt" ||
      fail "no Python frames in the PyTorch run's stacks (run/torch.cache.top.txt)"
    note "| torch_training.py (median step) | ${alone} ms | ${cache} ms | ${observe} ms | snapshots in run/ |"
  fi
fi

if ! skip PYTHON_PACKAGE; then
  # pip builds in the folder it is given: a copy, so that the source tree stays clean. The
  # virtual environment sees the system's packages (torch, cupy, setuptools, wheel).
  rm -rf "$out/python-package" "$out/python-venv"
  cp -r "$here/python" "$out/python-package"
  rm -rf "$out/python-package/build" "$out/python-package/src/"*.egg-info
  # Where python3 is itself a virtual environment (torch lives there), --system-site-packages
  # reaches only the base interpreter's: a .pth file adds the environment's packages too.
  if "$python" -m venv --system-site-packages "$out/python-venv" > "$out/python_package_install.log" 2>&1 &&
    "$python" -c 'import site; print("\n".join(site.getsitepackages()))' > \
      "$("$out/python-venv/bin/python" -c 'import site; print(site.getsitepackages()[0])')/parent_environment.pth" &&
    MEMTRAIL_BUILD_DIR="$build" "$out/python-venv/bin/pip" install --no-index --no-build-isolation \
      "$out/python-package" >> "$out/python_package_install.log" 2>&1; then
    PYTHONUNBUFFERED=1 "$out/python-venv/bin/python" "$here/tests/gpu/python_package.py" \
      "$out/python_package" "$build/bin/memtrail" > "$out/python_package.log" 2>&1 ||
      fail "python_package.py"
    note ""
    note "## The Python package (pip install, memtrail.torch.use())"
    note '```'
    cat "$out/python_package.log" >> "$out/results.md"
    note '```'
  else
    fail "pip install of the Python package (see python_package_install.log)"
  fi
fi

if ! skip JOBS; then
  # The jobs people run (FSDP1/FSDP2 and DDP on two GPUs, generate(), OOMs under caps), each with
  # the model's own numbers, then memory by meaning set beside those numbers.
  rm -rf "$out/jobs" && mkdir -p "$out/jobs"
  if [ "$gpus" -ge 2 ]; then
    PYTHONUNBUFFERED=1 "$python" "$here/tests/gpu/record_job_traces.py" all "$out/jobs" \
      > "$out/jobs.log" 2>&1 || fail "record_job_traces.py (see jobs.log)"
  else
    for workload in generate_dynamic generate_static compile_tags; do
      PYTHONUNBUFFERED=1 "$python" "$here/tests/gpu/record_job_traces.py" "$workload" \
        "$out/jobs" >> "$out/jobs.log" 2>&1 || fail "record_job_traces.py $workload"
    done
  fi
  note ""
  note "## Memory by meaning against the models' own numbers"
  "$python" "$here/tests/gpu/categories_truth.py" "$build/bin/memtrail" \
    $(ls "$out/jobs"/*.pickle | grep -E 'ddp|fsdp|generate|compile_tags') \
    >> "$out/results.md" 2>> "$out/jobs.log" || fail "categories off the models' numbers (jobs.log)"
fi

cat "$out/results.md"
exit $status
