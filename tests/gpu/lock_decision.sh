#!/usr/bin/env bash
# The device lock as shipped (issue 35 decided it with this script): bench_lock_decision
# measuring 512 B pairs through librecorder's C API on 1, 2, 4 and 8 threads, recording off and
# on, beside core's allocator alone (the bare rows: what the C API's path costs) and PyTorch's
# CUDACachingAllocator in the same process (medians of 5 runs each):
#   tests/gpu/lock_decision.sh BUILD OUT
# BUILD holds bin/bench_lock_decision (and lib/libmemtrail_torch_allocator.so for the PyTorch
# rows: a build configured with -DMEMTRAIL_TORCH_DIR, as tests/gpu/run.sh does). Without a visible
# GPU it runs on the simulated device (MEMTRAIL_DEVICE=sim:80GiB). Writes OUT/lock_shipped.json
# (the benchmark's JSON), OUT/lock_shipped.log and OUT/lock.md. REPETITIONS (default 5),
# SECONDS_PER_RUN (default 0.2) and THREADS (default 1,2,4,8) change the measurement.
set -eu
if [ $# -ne 2 ]; then
  echo "usage: $0 BUILD OUT" >&2
  exit 2
fi
build=$1
out=$2
here=$(cd "$(dirname "$0")" && pwd)
bench=$build/bin/bench_lock_decision
if [ ! -x "$bench" ]; then
  echo "$0: no $bench (build the bench_lock_decision target)" >&2
  exit 2
fi
mkdir -p "$out"
if [ -z "${MEMTRAIL_DEVICE:-}" ] && ! nvidia-smi -L > /dev/null 2>&1; then
  export MEMTRAIL_DEVICE=sim:80GiB
fi
echo "lock_decision: MEMTRAIL_DEVICE=${MEMTRAIL_DEVICE:-cuda}"
"$bench" --repetitions "${REPETITIONS:-5}" --seconds "${SECONDS_PER_RUN:-0.2}" \
  --threads "${THREADS:-1,2,4,8}" > "$out/lock_shipped.json" 2> "$out/lock_shipped.log" ||
  { cat "$out/lock_shipped.log" >&2; exit 1; }
python3 "$here/lock_table.py" "$out/lock.md" "shipped=$out/lock_shipped.json"
