"""What attaching costs a running job (docs/live.md), and how many events a second the live
stream carries before it falls behind.

    python3 tests/gpu/live_cost.py BUILD_DIR OUTDIR [PROCESSES] [PARTS]

BUILD_DIR holds lib/librecorder.so, bin/memtrail and bin/live_event_producer (built with the
tests); PARTS (comma-separated, default
in_process,processes,stream) picks what runs:

- in_process (GPU): one training process (the transformer of tests/gpu/torch_training.py on
  memtrail's allocator, recording every event with Python and native stacks, as its memtrail_all
  mode) alternates blocks of steps with one `memtrail top --attach PID --json` client attached and
  blocks with none, PROCESSES times; each attached block's median step against the mean of the
  unattached blocks beside it (training_overhead.py's protocol, memtrail_alternate's blocks).
- processes (GPU): PROCESSES processes attached for their whole run alternating with PROCESSES
  unattached ones (each round starting with the other), median step times compared.
- stream (no GPU: the simulated device): BUILD_DIR/bin/live_event_producer records malloc/free
  pairs at rising rates (50k to 4M events a second, then as fast as it can, 4 s each) while `top --attach --json` subscribes; for each rate,
  the events the producer recorded and the stream delivered per second, and how often the stream
  fell behind the ring (MEMTRAIL_MAX_ENTRIES=200000), which it says ("behind" frames) and
  recovers from with a snapshot: the highest rate without falling behind is what it sustains.

Prints a summary and writes OUTDIR/live_cost.json. The attached side is within 1% when both
in_process's median and processes' difference are under 1%.
"""
import ctypes
import json
import os
import signal
import statistics
import subprocess
import sys
import time

from block_statistics import describe, pooled

STEPS_WARMUP = 20
# Steps a block (at ~50 ms a step, a block of 24 sees a few of top's refreshes) and alternating
# blocks after the warm-up, the first attached; LIVE_BLOCK and LIVE_BLOCKS change them.
BLOCK = int(os.environ.get("LIVE_BLOCK", "24"))
BLOCKS = int(os.environ.get("LIVE_BLOCKS", "12"))
PROCESS_STEPS = 160
# Events a second the producer is asked for; 0: as fast as it can.
STREAM_RATES = [50_000, 200_000, 500_000, 1_000_000, 2_000_000, 4_000_000, 0]
STREAM_SECONDS = 4


# ---- the children ---------------------------------------------------------------------------

def training_child(library, steps, handshake):
    """Trains on memtrail's allocator; with `handshake`, asks the parent (ATTACH / DETACH on
    stdout, an answer on stdin) before each block. Prints one JSON line of step times."""
    import torch
    import torch.nn as nn
    allocator = torch.cuda.memory.CUDAPluggableAllocator(library, "memtrail_malloc",
                                                         "memtrail_free")
    torch.cuda.memory.change_current_allocator(allocator)
    memtrail = ctypes.CDLL(library)
    memtrail.memtrail_record_memory_history.argtypes = [ctypes.c_char_p] * 3 + [ctypes.c_size_t]
    memtrail.memtrail_last_error.restype = ctypes.c_char_p
    if memtrail.memtrail_record_memory_history(b"all", b"all", b"all", 1_000_000) != 0:
        raise RuntimeError(memtrail.memtrail_last_error().decode())
    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(d_model=1024, nhead=16, dim_feedforward=4096,
                                       batch_first=True)
    model = nn.Sequential(nn.Embedding(32000, 1024), nn.TransformerEncoder(layer, num_layers=8),
                          nn.Linear(1024, 32000)).cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    gen = torch.Generator(device="cuda").manual_seed(1)
    print("READY", flush=True)
    sys.stdin.readline()
    times, attached = [], []
    state = False
    for step in range(steps):
        if handshake and step >= STEPS_WARMUP and (step - STEPS_WARMUP) % BLOCK == 0:
            state = (step - STEPS_WARMUP) // BLOCK % 2 == 0
            print("ATTACH" if state else "DETACH", flush=True)
            sys.stdin.readline()
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        x = torch.randint(0, 32000, (8, 512), device="cuda", generator=gen)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            y = model(x)
            loss = nn.functional.cross_entropy(y.float().view(-1, 32000), x.view(-1))
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
        attached.append(state)
    print(json.dumps({"step_s": times, "attached": attached}), flush=True)


# ---- the parent -----------------------------------------------------------------------------

class Top:
    """`memtrail top --attach PID --json` (a refresh a second), its JSON lines kept. It attaches
    within milliseconds of starting; the job is not kept waiting for its first refresh (a GPU left
    idle for a second slows the steps after it)."""

    def __init__(self, memtrail, pid, outfile):
        self.outfile = outfile
        self.process = subprocess.Popen([memtrail, "top", "--attach", str(pid), "--json"],
                                        stdout=subprocess.PIPE, text=True)

    def stop(self):
        self.process.send_signal(signal.SIGINT)
        out, _ = self.process.communicate(timeout=60)
        with open(self.outfile, "w") as f:
            f.write(out)
        return [json.loads(line) for line in out.splitlines() if line.strip()]


def start_child(args, env):
    child = subprocess.Popen([sys.executable, __file__, *args], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True, env=env)
    assert child.stdout.readline().strip() == "READY"
    return child


def answer(child):
    child.stdin.write("go\n")
    child.stdin.flush()


def in_process(build, outdir, index):
    child = start_child(["--train", library_of(build), str(STEPS_WARMUP + BLOCK * BLOCKS), "1"],
                        os.environ)
    answer(child)
    top = None
    while (line := child.stdout.readline().strip()) in ("ATTACH", "DETACH"):
        if line == "ATTACH":
            top = Top(memtrail_of(build), child.pid, f"{outdir}/in_process.{index}.top.jsonl")
        else:
            top.stop()
        answer(child)
    if top is not None and top.process.poll() is None:
        top.stop()
    child.wait()
    result = json.loads(line)
    blocks = []
    for b in range(BLOCKS):
        first = STEPS_WARMUP + b * BLOCK
        blocks.append((result["attached"][first],
                       statistics.median(result["step_s"][first:first + BLOCK]) * 1000))
    ratios = []
    for i, (on, ms) in enumerate(blocks):
        beside = [blocks[j][1] for j in (i - 1, i + 1) if 0 <= j < len(blocks) and not blocks[j][0]]
        if on and beside:
            ratios.append(ms / statistics.mean(beside))
    return {"blocks_ms": blocks, "ratios": ratios,
            "overhead_pct": 100 * (statistics.median(ratios) - 1)}


def one_process(build, outdir, index, attached):
    child = start_child(["--train", library_of(build), str(PROCESS_STEPS), "0"], os.environ)
    top = Top(memtrail_of(build), child.pid, f"{outdir}/process.{index}.top.jsonl") \
        if attached else None
    answer(child)
    result = json.loads(child.stdout.readline())
    child.wait()
    refreshes = top.stop() if top else []
    return {"step_ms_median": 1000 * statistics.median(result["step_s"][STEPS_WARMUP:]),
            "refreshes": len(refreshes)}


def stream(build, outdir):
    env = dict(os.environ, MEMTRAIL_DEVICE="sim:8GiB", MEMTRAIL_RECORD="all",
               MEMTRAIL_STACKS="native", MEMTRAIL_MAX_ENTRIES="200000")
    rows = []
    for rate in STREAM_RATES:
        child = subprocess.Popen([os.path.join(build, "bin", "live_event_producer"), str(rate),
                                  str(STREAM_SECONDS)], stdin=subprocess.PIPE,
                                 stdout=subprocess.PIPE, text=True, env=env)
        assert child.stdout.readline().strip() == "READY"
        top = Top(memtrail_of(build), child.pid, f"{outdir}/stream.{rate}.top.jsonl")
        time.sleep(0.5)  # subscribed before the first event is recorded
        answer(child)
        produced = json.loads(child.stdout.readline())
        child.wait()
        lines = top.stop()
        last = [p for line in lines for p in line["processes"]][-1]
        # Every event the stream delivered, over the time the producer recorded them.
        rows.append({"target": rate,
                     "recorded_per_second": produced["events"] / produced["seconds"],
                     "delivered_per_second": last["events"] / produced["seconds"],
                     "delivered_events": last["events"], "fell_behind": last["fell_behind"]})
        print(f"stream: {rate:>9,}/s asked, {rows[-1]['recorded_per_second']:>11,.0f}/s recorded, "
              f"{rows[-1]['delivered_per_second']:>11,.0f}/s delivered, "
              f"fell behind {last['fell_behind']}x", flush=True)
    kept_up = [r["recorded_per_second"] for r in rows if r["fell_behind"] == 0]
    return {"rates": rows, "sustained_per_second": max(kept_up) if kept_up else 0}


def library_of(build):
    return os.path.join(build, "lib", "librecorder.so")


def memtrail_of(build):
    return os.path.join(build, "bin", "memtrail")


def main():
    build, outdir = os.path.abspath(sys.argv[1]), sys.argv[2]
    runs = int(sys.argv[3]) if len(sys.argv) > 3 else 4
    parts = sys.argv[4].split(",") if len(sys.argv) > 4 else ["in_process", "processes", "stream"]
    os.makedirs(outdir, exist_ok=True)
    summary = {}
    if "in_process" in parts:
        results = []
        for index in range(runs):
            results.append(in_process(build, outdir, index))
            print(f"in-process run {index}: attached blocks "
                  f"{results[-1]['overhead_pct']:+.2f}% against the unattached beside them",
                  flush=True)
        overheads = [r["overhead_pct"] for r in results]
        summary["in_process"] = {"runs": results, "median_pct": statistics.median(overheads),
                                 "min_pct": min(overheads), "max_pct": max(overheads),
                                 "pooled": pooled([r["ratios"] for r in results])}
    if "processes" in parts:
        times = {True: [], False: []}
        for index in range(runs):
            for attached in ((True, False) if index % 2 == 0 else (False, True)):
                r = one_process(build, outdir, f"{index}.{int(attached)}", attached)
                times[attached].append(r["step_ms_median"])
                print(f"process {index} {'attached' if attached else 'alone':8s}: "
                      f"{r['step_ms_median']:.3f} ms a step"
                      + (f" ({r['refreshes']} refreshes of top)" if attached else ""), flush=True)
        summary["processes"] = {
            "attached_ms": times[True], "alone_ms": times[False],
            "overhead_pct": 100 * (statistics.median(times[True]) /
                                   statistics.median(times[False]) - 1)}
    if "stream" in parts:
        summary["stream"] = stream(build, outdir)
    with open(os.path.join(outdir, "live_cost.json"), "w") as f:
        json.dump(summary, f, indent=1)
    if "in_process" in summary:
        s = summary["in_process"]
        print(f"in one process: attached {s['median_pct']:+.2f}% (median of {runs} processes, "
              f"spread {s['min_pct']:+.2f}% to {s['max_pct']:+.2f}%); every process's blocks "
              f"pooled: {describe(s['pooled'])}")
    if "processes" in summary:
        print(f"alternating processes: attached {summary['processes']['overhead_pct']:+.2f}% "
              f"(medians of {runs} each)")
    if "stream" in summary:
        print(f"the stream kept up with {summary['stream']['sustained_per_second']:,.0f} "
              f"events/s without falling behind")


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--train":
        training_child(sys.argv[2], int(sys.argv[3]), sys.argv[4] == "1")
    elif len(sys.argv) in (3, 4, 5):
        main()
    else:
        sys.exit(f"usage: {sys.argv[0]} BUILD_DIR OUTDIR [PROCESSES] [PARTS]")
