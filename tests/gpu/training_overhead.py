"""The cost of recording inside real training: torch_training.py's child, alternating PyTorch's
allocator without recording, memtrail's production mode (every event, the Python and native
stack of every allocation, frees without: context "alloc", stacks "all"), memtrail recording every
stack (context "all", stacks "all") and PyTorch's own recorder (torch_recording, context and
stacks "all"), each in a fresh process, N times each (6 by default); and production against no
recording in blocks of steps inside each of N more processes (memtrail_alternate_production).

    python3 tests/gpu/training_overhead.py path/to/librecorder.so[,another.so] OUTDIR [N]
        [UNWINDER] [MODES]

About 4 minutes on an H200 with the defaults (MEMTRAIL_TRAINING_STEPS=100 steps a process).

Prints every run's median step time (and the process's CPU time per step, up to the wait for
the GPU), the median and
spread of each side and memtrail's overhead over PyTorch's median; writes
OUTDIR/training_overhead.json. UNWINDER (eh_frame, libunwind or frame_pointer) is
MEMTRAIL_UNWINDER for memtrail's runs. MODES (comma-separated, default memtrail_all) adds other
modes of torch_training.py's child to the rotation, e.g. memtrail_off,memtrail_nostacks,
memtrail_native,memtrail_python,memtrail_all to split recording's cost, or torch_recording
(PyTorch's allocator with its own recorder on, context and stacks "all"); memtrail_alternate
switches recording everything on and off in blocks of steps inside each process, which measures
recording's cost without the spread between processes (printed as well, in step time and in the
CPU time of the process's threads a step). memtrail_alternate_production_native and
memtrail_alternate_production_python split production's cost the same way (allocations' native
or Python stacks alone). With several libraries (builds before and after a change), each memtrail
mode runs with each, labelled MODE@2, MODE@3 for the second, third, in the same rotation.
"""
import json
import os
import statistics
import subprocess
import sys

from block_statistics import describe, pooled

libraries, outdir = sys.argv[1].split(","), sys.argv[2]
runs = int(sys.argv[3]) if len(sys.argv) > 3 else 6
unwinder = sys.argv[4] if len(sys.argv) > 4 else "eh_frame"
modes = (sys.argv[5].split(",") if len(sys.argv) > 5 else
         ["memtrail_production", "memtrail_all", "torch_recording",
          "memtrail_alternate_production"])
os.makedirs(outdir, exist_ok=True)
child = os.path.join(os.path.dirname(os.path.abspath(__file__)), "torch_training.py")


def mode_and_library(label):
    """A label's child mode and library: "MODE" runs with the first library, "MODE@N" with the
    Nth (LIBRARY given as several, comma-separated)."""
    mode, _, number = label.partition("@")
    return mode, libraries[int(number) - 1 if number else 0]


def step_ms(label, index):
    mode, library = mode_and_library(label)
    # 100 steps a process (the first 16 skipped): with 40, the spread between processes of one
    # allocator on an H100 was 25%, more than what is measured.
    environment = dict(os.environ, MEMTRAIL_UNWINDER=unwinder,
                       MEMTRAIL_TRAINING_STEPS=os.environ.get("MEMTRAIL_TRAINING_STEPS", "100"))
    # No snapshot ("") is written: only the time is wanted here.
    run = subprocess.run([sys.executable, child, "--child", mode, library, ""],
                         capture_output=True, text=True, env=environment)
    if run.returncode != 0:
        sys.exit(f"{label} run {index} failed:\n{run.stderr[-2000:]}")
    result = json.loads(run.stdout.strip().splitlines()[-1])
    with open(os.path.join(outdir, f"{label}.{index}.json"), "w") as f:
        json.dump(result, f)  # every step's time, to see drifts inside a process
    if "alternate" in result:
        alternate[label].append(result["alternate"]["overhead_pct"])
        block_ratios[label].append(result["alternate"]["block_ratios"])
        alternate_cpu[label].append(result["alternate_process_cpu"]["overhead_pct"])
    return result["step_ms_median"], result["process_cpu_ms_median"]


# Each memtrail mode with each library after the first too ("MODE@2", ...): builds before and
# after a change, alternating in one call.
modes += [f"{mode}@{number}" for number in range(2, len(libraries) + 1) for mode in modes
          if mode.startswith("memtrail")]
times = {mode: [] for mode in ["torch", *modes]}
alternate = {mode: [] for mode in times}  # memtrail_alternate: recording's cost in each process
block_ratios = {mode: [] for mode in times}  # every process's blocks, pooled
alternate_cpu = {mode: [] for mode in times}  # the same in the CPU time of the process's threads
cpu = {mode: [] for mode in times}
order = list(times)
for index in range(runs):
    # Alternating, so drifts of the machine touch every side alike, and each round starting one
    # mode later: on the H100 hosts the first of back-to-back processes was often the slower
    # (docs/performance-log/12-issue-17-round-11.md), which a fixed order gives one side.
    for mode in order[index % len(order):] + order[:index % len(order)]:
        step, step_cpu = step_ms(mode, index)
        times[mode].append(step)
        cpu[mode].append(step_cpu)
        print(f"{mode:17s} run {index}: {step:.3f} ms (CPU {step_cpu:.3f} ms)", flush=True)

summary = {"unwinder": unwinder}
for mode, values in times.items():
    summary[mode] = {"median_ms": statistics.median(values), "min_ms": min(values),
                     "max_ms": max(values), "runs": values,
                     "process_cpu_median_ms": statistics.median(cpu[mode])}
    if alternate[mode]:
        summary[mode]["recording_in_process_pct"] = {
            "median": statistics.median(alternate[mode]), "min": min(alternate[mode]),
            "max": max(alternate[mode]), "runs": alternate[mode]}
        summary[mode]["recording_in_process_pooled"] = pooled(block_ratios[mode])
        summary[mode]["recording_in_process_cpu_pct"] = {
            "median": statistics.median(alternate_cpu[mode]), "min": min(alternate_cpu[mode]),
            "max": max(alternate_cpu[mode]), "runs": alternate_cpu[mode]}
    if mode != "torch":
        summary[mode]["overhead_pct"] = round(
            100 * (summary[mode]["median_ms"] / summary["torch"]["median_ms"] - 1), 2)
with open(os.path.join(outdir, "training_overhead.json"), "w") as f:
    json.dump(summary, f, indent=1)
for mode in times:
    s = summary[mode]
    print(f"{mode:17s} median {s['median_ms']:.3f} ms over {runs} processes "
          f"(spread {s['min_ms']:.3f} to {s['max_ms']:.3f}), CPU of the process "
          f"{s['process_cpu_median_ms']:.3f} ms"
          + (f": {s['overhead_pct']:+.2f}% over PyTorch's allocator without recording"
             if mode != "torch" else ""))
    if "recording_in_process_pct" in s:
        r = s["recording_in_process_pct"]
        print(f"{mode:17s} recording on against off in the same process (blocks of steps): "
              f"median {r['median']:+.2f}% over {len(r['runs'])} processes "
              f"(spread {r['min']:+.2f}% to {r['max']:+.2f}%)")
        print(f"{mode:17s} every process's blocks pooled: "
              f"{describe(s['recording_in_process_pooled'])}")
        r = s["recording_in_process_cpu_pct"]
        print(f"{mode:17s} the same in the CPU time of the process's threads a step: "
              f"median {r['median']:+.2f}% (spread {r['min']:+.2f}% to {r['max']:+.2f}%)")
