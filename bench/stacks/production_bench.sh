#!/bin/sh
# Builds librecorder and the native worker in BUILD, then runs production_bench.py against them:
# ns per allocation recording off, production and all, from Python's main thread and from a
# native worker thread. Where BUILD was configured with -DMEMTRAIL_COST_COUNTERS=ON, the cost
# counters' summary of each mode follows (MEMTRAIL_COST_COUNTERS_FILE read from BUILD's cache).
#
#   bench/stacks/production_bench.sh BUILD [ROUNDS] [STEPS]
set -eu
if [ $# -lt 1 ]; then
    echo "usage: $0 BUILD [ROUNDS] [STEPS]" >&2
    exit 2
fi
build=$1
here=$(cd "$(dirname "$0")" && pwd)
cmake --build "$build" --target recorder memtrail_bench_native_worker >/dev/null
costs=""
if grep -q '^MEMTRAIL_COST_COUNTERS:BOOL=ON' "$build/CMakeCache.txt"; then
    costs=$(sed -n 's/^MEMTRAIL_COST_COUNTERS_FILE:STRING=//p' "$build/CMakeCache.txt")
    mkdir -p "$(dirname "$costs")"
fi
exec python3 "$here/production_bench.py" "$build/lib/librecorder.so" \
    "$build/lib/libmemtrail_bench_native_worker.so" "${2:-5}" "${3:-400}" "$costs"
