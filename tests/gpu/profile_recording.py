"""Where recording's time goes inside real training, thread by thread: torch_training.py's child
run twice under `perf record -e cpu-clock` (sampling needs no hardware counters, which the GPU
hosts' virtual machines lack), once recording nothing and once recording everything, and the
difference in sampled time per thread and per function.

    python3 tests/gpu/profile_recording.py path/to/librecorder.so OUTDIR [PERF] [STEPS] [MODE]

PERF is the perf binary (default: perf on PATH); an unstripped librecorder.so names memtrail's
own functions. The GPU hosts have no perf: a Debian one carried over runs there with the
libraries ldd lists beside it and its RUNPATH set to them (patchelf --set-rpath '$ORIGIN/lib').
Each child runs STEPS steps (default 120), MEMTRAIL_UNWINDER=eh_frame. MODE is the recording child
(default memtrail_all; memtrail_python or memtrail_native to profile one kind of stack). The two busiest threads
(the main Python thread and autograd's worker) are compared; every other thread is left out.
Prints, per thread, the milliseconds each library and function gained with
recording on (over the whole run, the start included: it is the same in both), and writes the
reports to OUTDIR. One process of each: differences under about 10 ms are the spread between
processes.
"""
import collections
import os
import re
import subprocess
import sys

library, outdir = sys.argv[1], sys.argv[2]
perf = sys.argv[3] if len(sys.argv) > 3 else "perf"
steps = sys.argv[4] if len(sys.argv) > 4 else "120"
recording = sys.argv[5] if len(sys.argv) > 5 else "memtrail_all"
os.makedirs(outdir, exist_ok=True)
child = os.path.join(os.path.dirname(os.path.abspath(__file__)), "torch_training.py")
frequency = 8000  # samples a second and thread


def report(data, *options):
    return subprocess.run([perf, "report", "-i", data, "--stdio", "--no-children", *options],
                          capture_output=True, text=True, check=True).stdout


def busiest_threads(data, count=2):
    """(tid, name) of the threads with the most samples, busiest first."""
    threads = []
    for line in report(data, "--sort", "pid").splitlines():
        match = re.match(r"\s+[\d.]+%\s+(\d+):(\S+)", line)
        if match:
            threads.append((match.group(1), match.group(2)))
    return threads[:count]


def milliseconds_by_function(data, tid):
    """{(library, function): sampled ms} for one thread."""
    text = report(data, "--tid", tid, "--sort", "dso,sym")
    total_ns = int(re.search(r"Event count \(approx\.\): (\d+)", text).group(1))
    found = collections.Counter()
    for line in text.splitlines():
        match = re.match(r"\s+([\d.]+)%\s+(\S+)\s+\[[.k]\]\s+(.*\S)", line)
        if match:
            found[(match.group(2), match.group(3)[:100])] += float(match.group(1)) * total_ns / 1e8
    return found


profiles = {}
for mode in ("memtrail_off", recording):
    data = os.path.join(outdir, f"{mode}.perf.data")
    environment = dict(os.environ, MEMTRAIL_UNWINDER="eh_frame", MEMTRAIL_TRAINING_STEPS=steps)
    subprocess.run([perf, "record", "-q", "-e", "cpu-clock", "-F", str(frequency), "-o", data, "--",
                    sys.executable, child, "--child", mode, library, ""],
                   env=environment, check=True, stdout=subprocess.DEVNULL)
    profiles[mode] = [(name, milliseconds_by_function(data, tid))
                      for tid, name in busiest_threads(data)]

for (name, off), (_, on) in zip(profiles["memtrail_off"], profiles[recording]):
    gained = collections.Counter({key: on[key] - off[key] for key in set(on) | set(off)})
    by_library = collections.Counter()
    for (dso, _), ms in gained.items():
        by_library[dso] += ms
    print(f"== thread {name}: {sum(off.values()):.0f} ms sampled recording nothing, "
          f"{sum(on.values()):.0f} ms recording ({recording})")
    for dso, ms in by_library.most_common(6):
        print(f"  {ms:+8.1f} ms  {dso}")
    print("  by function:")
    for (dso, function), ms in gained.most_common(15):
        print(f"  {ms:+8.1f} ms  {dso}: {function}")
