#!/usr/bin/env bash
# Builds memtrail with ASan+UBSan (build-asan/) and with TSan (build-tsan/), runs the whole test
# suite in each, then runs each libFuzzer target for a while (build-fuzz/, clang).
#
#   scripts/check-sanitizers.sh              # asan, tsan and fuzz
#   scripts/check-sanitizers.sh asan fuzz    # only those steps
#
# JOBS (default: the number of cores) sets build and test parallelism, FUZZ_SECONDS (default 60)
# each fuzzer's run, FUZZ_SEED (default: a new one each run) libFuzzer's seed: CI gives one, so
# that its run tries the inputs a run here with that seed tried. Every step runs even when an earlier one fails; the exit status is 1 when
# any failed, and the last lines say which.
set -uo pipefail
cd "$(dirname "$0")/.."
jobs=${JOBS:-$(nproc)}
fuzz_seconds=${FUZZ_SECONDS:-60}
fuzz_seed=${FUZZ_SEED:-0}
steps=("$@")
if [[ ${#steps[@]} -eq 0 ]]; then
  steps=(asan tsan fuzz)
fi

# Configures and builds `folder` with MEMTRAIL_SANITIZE=`sanitizer`, then runs ctest there.
sanitizer_suite() {
  local folder=$1 sanitizer=$2
  mkdir -p "$folder"
  cmake -S . -B "$folder" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DMEMTRAIL_SANITIZE="$sanitizer" > "$folder/configure.log" \
    || { cat "$folder/configure.log"; return 1; }
  cmake --build "$folder" -j "$jobs" || return 1
  (cd "$folder" && ctest --output-on-failure -j "$jobs" --timeout 1800)
}

# Each fuzzer from the checked-in files, its corpus kept in build-fuzz/corpus/ between runs.
fuzz_smoke() {
  mkdir -p build-fuzz
  CC=clang-14 CXX=clang++-14 cmake -S . -B build-fuzz -G Ninja -DMEMTRAIL_FUZZ=ON \
    > build-fuzz/configure.log || { cat build-fuzz/configure.log; return 1; }
  cmake --build build-fuzz -j "$jobs" --target fuzz_torch_pickle fuzz_snapshot_reader || return 1
  local failed=0 target seeds max_len
  for target in fuzz_torch_pickle fuzz_snapshot_reader; do
    if [[ $target == fuzz_torch_pickle ]]; then
      seeds=../shared/anchors/pytorch max_len=65536
    else
      seeds=tests/data max_len=16384
    fi
    mkdir -p "build-fuzz/corpus/$target"
    echo "== $target for ${fuzz_seconds} s"
    "build-fuzz/bin/$target" -max_total_time="$fuzz_seconds" -max_len="$max_len" \
      -seed="$fuzz_seed" -print_final_stats=1 "build-fuzz/corpus/$target" "$seeds" 2>&1 |
      tail -n 12 || failed=1
  done
  return "$failed"
}

failures=()
for step in "${steps[@]}"; do
  echo "==== $step"
  case $step in
    asan) sanitizer_suite build-asan address || failures+=(asan) ;;
    tsan) sanitizer_suite build-tsan thread || failures+=(tsan) ;;
    fuzz) fuzz_smoke || failures+=(fuzz) ;;
    *) echo "unknown step '$step': asan, tsan or fuzz" >&2; exit 2 ;;
  esac
done
if [[ ${#failures[@]} -ne 0 ]]; then
  echo "==== failed: ${failures[*]}"
  exit 1
fi
echo "==== all passed: ${steps[*]}"
