#!/usr/bin/env bash
# `memtrail ranks` at scale through the command, files included: folders of 1,000 and 10,000
# rank snapshots made from a real DDP rank (tests/data/traces/jobs.tar.gz's ddp__rank0, written
# back as a 0.37 MB PyTorch pickle, hard-linked under each rank's name) with rank N/2 the other
# DDP rank; for each, the wall and CPU time and peak RSS of
#   ranks from snapshots   memtrail ranks FOLDER            (summaries computed on every core)
#   summarize              memtrail summarize -o S FOLDER   (snapshots to summaries per core per s)
#   ranks from summaries   memtrail ranks S
# and whether the report names rank N/2 as the one outlier. Prints a table, writes OUT/ranks_scale.json.
#
#   bench/analysis/ranks_scale.sh build /tmp/ranks-scale [1000 10000]
set -euo pipefail
build=$(realpath "$1")
out=$2
shift 2
counts=("$@")
[ ${#counts[@]} -gt 0 ] || counts=(1000 10000)
traces=$build/tests/replay/traces
mkdir -p "$out"
json="$out/ranks_scale.json"
echo "[" > "$json"

# Runs a command under GNU time; sets wall, cpu (user + sys) and rss_mb.
measure() {
  /usr/bin/time -f "%e %U %S %M" -o "$out/time.txt" "$@" > "$out/stdout.txt"
  read -r wall user sys rss_kb < "$out/time.txt"
  cpu=$(python3 -c "print(round($user + $sys, 2))")
  rss_mb=$((rss_kb / 1024))
}

printf "%7s  %-22s %8s %8s %8s  %s\n" ranks step "wall s" "cpu s" "RSS MB" note
first=1
for n in "${counts[@]}"; do
  snapshots=$out/snapshots-$n
  summaries=$out/summaries-$n
  rm -rf "$snapshots" "$summaries"
  "$build/bin/make_rank_files" "$traces/ddp__rank0.pickle" "$traces/ddp__rank1.pickle" \
    $((n / 2)) "$n" "$snapshots" pickle
  measure "$build/bin/memtrail" ranks "$snapshots"
  found=$(grep -c "^1 outlier (more than 3.5 robust deviations from the median): rank $((n / 2))\$" \
          "$out/stdout.txt" || true)
  printf "%7s  %-22s %8s %8s %8s  %s\n" "$n" "ranks from snapshots" "$wall" "$cpu" "$rss_mb" \
    "outlier rank $((n / 2)) named: $found"
  from_snapshots="{\"wall_s\": $wall, \"cpu_s\": $cpu, \"peak_rss_mb\": $rss_mb, \"outlier_named\": $found}"
  measure "$build/bin/memtrail" summarize -o "$summaries" "$snapshots"
  per_core=$(python3 -c "print(round($n / max($cpu, 0.01)))")
  printf "%7s  %-22s %8s %8s %8s  %s\n" "$n" "summarize" "$wall" "$cpu" "$rss_mb" \
    "$per_core snapshots per core per second"
  summarize="{\"wall_s\": $wall, \"cpu_s\": $cpu, \"peak_rss_mb\": $rss_mb, \"per_core_per_s\": $per_core}"
  measure "$build/bin/memtrail" ranks "$summaries"
  found=$(grep -c "^1 outlier (more than 3.5 robust deviations from the median): rank $((n / 2))\$" \
          "$out/stdout.txt" || true)
  printf "%7s  %-22s %8s %8s %8s  %s\n" "$n" "ranks from summaries" "$wall" "$cpu" "$rss_mb" \
    "outlier rank $((n / 2)) named: $found"
  from_summaries="{\"wall_s\": $wall, \"cpu_s\": $cpu, \"peak_rss_mb\": $rss_mb, \"outlier_named\": $found}"
  [ $first -eq 1 ] || echo "," >> "$json"
  first=0
  echo "{\"ranks\": $n, \"snapshot_bytes\": $(stat -c %s "$snapshots/rank0.pickle"), \"cores\": $(nproc), \"ranks_from_snapshots\": $from_snapshots, \"summarize\": $summarize, \"ranks_from_summaries\": $from_summaries}" >> "$json"
done
echo "]" >> "$json"
echo "written: $json"
