#!/usr/bin/env bash
# The device lock's decision (issue 35): bench_lock_decision once per candidate, each process
# measuring 512 B pairs through librecorder's C API on 1, 2, 4 and 8 threads, recording off and
# on, beside PyTorch's CUDACachingAllocator in the same process (medians of 5 runs each):
#   tests/gpu/lock_decision.sh BUILD OUT
# BUILD holds bin/bench_lock_decision (and lib/libmemtrail_torch_allocator.so for the PyTorch
# rows: a build configured with -DMEMTRAIL_TORCH_DIR, as tests/gpu/run.sh does). The candidates,
# chosen by MEMTRAIL_DEVICE_LOCK as librecorder starts:
#   combining           (a) the combining lock; the recorder is the allocator's observer only
#                       while it records a trace: recording off, the lock's holder makes waiting
#                       threads' operations; recording on, each thread makes its own
#   combining_observed  (b) the same, and recording on too the holder makes them, its events
#                       naming the thread that asked
#   spinning            (c) no combining: every thread takes the lock itself (spin, then sleep)
# Without a visible GPU it runs on the simulated device (MEMTRAIL_DEVICE=sim:80GiB). Writes
# OUT/lock_<candidate>.json (the benchmark's JSON), OUT/lock_<candidate>.log and OUT/lock.md.
# REPETITIONS (default 5) and SECONDS_PER_RUN (default 0.2) change the measurement.
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
tables=()
for candidate in combining combining_observed spinning; do
  echo "lock_decision: $candidate (MEMTRAIL_DEVICE=${MEMTRAIL_DEVICE:-cuda})"
  MEMTRAIL_DEVICE_LOCK=$candidate "$bench" --repetitions "${REPETITIONS:-5}" \
    --seconds "${SECONDS_PER_RUN:-0.2}" > "$out/lock_$candidate.json" 2> "$out/lock_$candidate.log" ||
    { cat "$out/lock_$candidate.log" >&2; exit 1; }
  tables+=("$candidate=$out/lock_$candidate.json")
done
python3 "$here/lock_table.py" "$out/lock.md" "${tables[@]}"
