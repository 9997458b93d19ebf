"""Compares `memtrail categories` with torch.profiler's memory profiler on the run that
categories_vs_profiler.py recorded: bytes per category at the profiler's peak and at the end of
every optimizer step, as a markdown table, and the largest difference.

    python3 tests/gpu/categories_agreement.py MEMTRAIL RUNDIR
MEMTRAIL is the memtrail binary; RUNDIR holds run.pickle and profiler.json. The profiler's
timeline and the snapshot share one clock (microseconds since the epoch), so each moment is the
last profiler sample and the last trace entry at or before it.
"""
import bisect
import json
import pathlib
import pickle
import subprocess
import sys

memtrail, run = sys.argv[1], pathlib.Path(sys.argv[2])
profiler = json.loads((run / "profiler.json").read_text())
with open(run / "run.pickle", "rb") as f:
    trace_times = [e["time_us"] for e in pickle.load(f)["device_traces"][0]]
categories = profiler["categories"]
times = profiler["times"]


def profiler_at(sample):
    # Column 0 of the profiler's coalesced timeline is not a category; column k is category k-1.
    return {categories[k - 1]: v for k, v in enumerate(profiler["sizes"][sample]) if k > 0}


def memtrail_at(time_us):
    entries = bisect.bisect_right(trace_times, time_us)
    out = subprocess.run([memtrail, "categories", str(run / "run.pickle"), "--at",
                          str(entries - 1), "--json"], capture_output=True, text=True, check=True)
    return entries - 1, json.loads(out.stdout)["categories"]


with open(run / "run.pickle", "rb") as f:
    marks = [a["time_us"] for a in pickle.load(f)["external_annotations"]
             if a["name"].startswith("memtrail_step_end_") and a["stage"] == "START"]
moments = [("profiler's peak", profiler["peak_index"])]
moments += [(f"end of step {i}", bisect.bisect_right(times, m) - 1) for i, m in enumerate(marks)]

print(f"{profiler['device']}, torch {profiler['torch']}; model parameters: "
      f"{profiler['parameter_bytes']} bytes\n")
print("| moment | category | torch.profiler | memtrail | difference |")
print("|---|---|---|---|---|")
worst = 0
for name, sample in moments:
    entry, ours = memtrail_at(times[sample])
    theirs = profiler_at(sample)
    for c in categories:
        difference = ours[c] - theirs[c]
        worst = max(worst, abs(difference))
        if ours[c] or theirs[c]:
            print(f"| {name} (entry {entry}) | {c} | {theirs[c]} | {ours[c]} | {difference:+d} |")
print(f"\nlargest difference: {worst} bytes")
