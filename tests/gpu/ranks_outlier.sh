#!/usr/bin/env bash
# `memtrail ranks` on a real FSDP2 job over every GPU present: torchrun runs
# tests/gpu/record_job_traces.py's fsdp2_imbalance workload (a transformer sharded with FSDP2,
# every rank batch 4 but the last, given batch 8), each rank dumping PyTorch's snapshot; then
# `memtrail ranks` on the folder must name the last rank, and only it, as the outlier, and
# explain it by activations, against a median rank whose parameters, gradients and optimizer
# state it equals (the recording's own numbers, in each rank's .json).
#
#   tests/gpu/ranks_outlier.sh BUILD_DIR OUT_DIR
#
# Needs 2 GPUs or more, PyTorch with torchrun. Prints a short summary; writes OUT_DIR/ranks.txt,
# OUT_DIR/ranks.json (the report) and OUT_DIR/ranks_outlier.json (what was checked). Exit 0 when
# every check holds.
set -euo pipefail
build=$(realpath "$1")
out=$(realpath -m "$2")
here=$(dirname "$(realpath "$0")")
gpus=$(python3 -c "import torch; print(torch.cuda.device_count())")
if [ "$gpus" -lt 2 ]; then
  echo "ranks_outlier: needs 2 GPUs or more, $gpus seen" >&2
  exit 2
fi
mkdir -p "$out/traces"
rm -f "$out"/traces/fsdp2_imbalance__rank*
torchrun --standalone --nproc_per_node "$gpus" "$here/record_job_traces.py" fsdp2_imbalance \
  "$out/traces" > "$out/torchrun.log" 2>&1 || { tail -20 "$out/torchrun.log"; exit 1; }
started=$(date +%s.%N)
"$build/bin/memtrail" ranks "$out/traces" > "$out/ranks.txt"
seconds=$(python3 -c "import time; print(round(time.time() - $started, 2))")
"$build/bin/memtrail" ranks --json "$out/traces" > "$out/ranks.json"
python3 - "$out" "$gpus" "$seconds" <<'PY'
import json, pathlib, sys
out, gpus, seconds = pathlib.Path(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
report = json.loads((out / "ranks.json").read_text())
truth = {int(p.stem.split("rank")[-1]): json.loads(p.read_text())["truth"]
         for p in (out / "traces").glob("fsdp2_imbalance__rank*.json")}
expected = max(r for r in truth if truth[r]["batch"] == 8)
checks = {}
checks["one job"] = len(report["jobs"]) == 1
job = report["jobs"][0]
checks[f"{gpus} ranks"] = [r["rank"] for r in job["ranks"]] == list(range(gpus))
outliers = [e["rank"] for e in job["outliers"]]
checks[f"rank {expected} (batch 8) is the one outlier"] = outliers == [expected]
e = job["outliers"][0] if job["outliers"] else None
by = {c["category"]: c for c in e["categories"]} if e else {}
checks["explained by activations first"] = bool(e) and e["summary"].startswith(
    f"rank {expected}: activation +")
checks["parameters, gradients, optimizer state equal"] = bool(e) and all(
    by[c]["equal"] for c in ["parameter", "gradient", "optimizer_state"])
checks["the grown stacks are activations"] = bool(e) and any(
    s["category"] == "activation" and s["change"] > 0 for s in e["stacks"])
checks["every other rank within the cut"] = all(
    r["distance"] <= report["outlier_cut"] for r in job["ranks"] if r["rank"] != expected)
result = {"gpus": gpus, "expected_outlier": expected, "outliers": outliers,
          "distance": e["distance"] if e else None, "measure": e["measure"] if e else None,
          "summary": e["summary"] if e else None,
          "activation_change": by["activation"]["change"] if e else None,
          "sequences": job["sequences"], "departures": job["departures"],
          "ranks_seconds": seconds, "checks": checks, "pass": all(checks.values())}
(out / "ranks_outlier.json").write_text(json.dumps(result, indent=2) + "\n")
print(f"ranks_outlier: {gpus} GPUs, FSDP2, rank {expected} given batch 8; memtrail ranks in {seconds} s")
print(f"  outliers: {outliers}" + (f", {e['distance']:.1f} robust deviations on {e['measure']}" if e else ""))
if e:
    print(f"  {e['summary']}")
for name, ok in checks.items():
    print(f"  {'ok  ' if ok else 'FAIL'} {name}")
sys.exit(0 if result["pass"] else 1)
PY
