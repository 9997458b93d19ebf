"""The cost of recording inside real training: torch_training.py's child, alternating PyTorch's
allocator without recording and memtrail recording every event with Python and native stacks
(context "all", stacks "all"), each in a fresh process, N times each.

    python3 tests/gpu/training_overhead.py path/to/librecorder.so OUTDIR [N] [UNWINDER]

Prints every run's median step time, the median and spread of each side and memtrail's overhead
over PyTorch's median; writes OUTDIR/training_overhead.json. UNWINDER (libunwind, eh_frame or
frame_pointer) is MEMTRAIL_UNWINDER for memtrail's runs.
"""
import json
import os
import statistics
import subprocess
import sys

library, outdir = sys.argv[1], sys.argv[2]
runs = int(sys.argv[3]) if len(sys.argv) > 3 else 6
unwinder = sys.argv[4] if len(sys.argv) > 4 else "libunwind"
os.makedirs(outdir, exist_ok=True)
child = os.path.join(os.path.dirname(os.path.abspath(__file__)), "torch_training.py")


def step_ms(mode, index):
    snapshot = os.path.join(outdir, f"{mode}.{index}.memtrail")
    environment = dict(os.environ, MEMTRAIL_UNWINDER=unwinder)
    run = subprocess.run([sys.executable, child, "--child", mode, library, snapshot],
                         capture_output=True, text=True, env=environment)
    if run.returncode != 0:
        sys.exit(f"{mode} run {index} failed:\n{run.stderr[-2000:]}")
    if os.path.exists(snapshot):
        os.remove(snapshot)  # only the time is wanted here
    return json.loads(run.stdout.strip().splitlines()[-1])["step_ms_median"]


times = {"torch": [], "memtrail_all": []}
for index in range(runs):
    for mode in times:  # alternating, so drifts of the machine touch both sides alike
        times[mode].append(step_ms(mode, index))
        print(f"{mode:13s} run {index}: {times[mode][-1]:.3f} ms", flush=True)

summary = {}
for mode, values in times.items():
    summary[mode] = {"median_ms": statistics.median(values), "min_ms": min(values),
                     "max_ms": max(values), "runs": values}
overhead = 100 * (summary["memtrail_all"]["median_ms"] / summary["torch"]["median_ms"] - 1)
summary["overhead_pct"] = round(overhead, 2)
summary["unwinder"] = unwinder
with open(os.path.join(outdir, "training_overhead.json"), "w") as f:
    json.dump(summary, f, indent=1)
for mode in times:
    s = summary[mode]
    print(f"{mode:13s} median {s['median_ms']:.3f} ms over {runs} processes "
          f"(spread {s['min_ms']:.3f} to {s['max_ms']:.3f})")
print(f"memtrail recording (context all, stacks all, {unwinder}): {overhead:+.2f}% median step time "
      f"over PyTorch's allocator without recording")
