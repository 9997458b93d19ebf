"""What a viewer attached (memtrail-viewer --attach) costs a running job, and how many events a
second it keeps up with (docs/viewer.md, "Following a running process").

    python3 tests/gpu/viewer_attach_cost.py BUILD_DIR OUTDIR [PROCESSES] [PARTS]

The viewer's side is BUILD_DIR/bin/viewer_follow: the viewer's following without a window
(two connections: the event stream, and a state snapshot every 0.5 s made a document on its
own thread, as the viewer does), so no display is needed. The job and the protocol are
live_cost.py's (the transformer of tests/gpu/torch_training.py on memtrail's allocator, every
event recorded with Python and native stacks); PARTS (comma-separated, default in_process,stream):

- in_process (GPU): one training process alternates blocks of steps with viewer_follow attached
  and blocks with none, PROCESSES times; each attached block's median step against the mean of
  the unattached blocks beside it, pooled over every process with a 95% bootstrap interval
  (block_statistics.py). The viewer is within 1% when the pooled median is under 1%.
- stream (no GPU: the simulated device): BUILD_DIR/bin/live_event_producer records malloc/free
  pairs at rising rates (50k to 4M events a second, then as fast as it can, 4 s each) while
  viewer_follow follows it; for each rate the events recorded and received per second, the
  documents made, and how often the stream fell behind (MEMTRAIL_MAX_ENTRIES=200000).

Prints a summary and writes OUTDIR/viewer_attach_cost.json.
"""
import json
import os
import signal
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import live_cost  # noqa: E402  (the training child and its handshake)
from block_statistics import describe, pooled  # noqa: E402

STREAM_RATES = [50_000, 200_000, 500_000, 1_000_000, 2_000_000, 4_000_000, 0]
STREAM_SECONDS = 4


class Follower:
    """viewer_follow PID: its JSON lines (one per document, a last one at the end) kept."""

    def __init__(self, build, pid, outfile):
        self.outfile = outfile
        self.process = subprocess.Popen([os.path.join(build, "bin", "viewer_follow"), str(pid)],
                                        stdout=subprocess.PIPE, text=True)

    def stop(self):
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)  # detaches
        out, _ = self.process.communicate(timeout=120)
        with open(self.outfile, "w") as f:
            f.write(out)
        return [json.loads(line) for line in out.splitlines() if line.strip()]


def in_process(build, outdir, index):
    steps = live_cost.STEPS_WARMUP + live_cost.BLOCK * live_cost.BLOCKS
    child = live_cost.start_child(["--train", live_cost.library_of(build), str(steps), "1"],
                                  os.environ)
    live_cost.answer(child)
    follower, documents = None, 0
    while (line := child.stdout.readline().strip()) in ("ATTACH", "DETACH"):
        if line == "ATTACH":
            follower = Follower(build, child.pid, f"{outdir}/in_process.{index}.follow.jsonl")
        else:
            documents += len(follower.stop())
        live_cost.answer(child)
    if follower is not None and follower.process.poll() is None:
        documents += len(follower.stop())
    child.wait()
    result = json.loads(line)
    blocks = []
    for b in range(live_cost.BLOCKS):
        first = live_cost.STEPS_WARMUP + b * live_cost.BLOCK
        blocks.append((result["attached"][first],
                       statistics.median(result["step_s"][first:first + live_cost.BLOCK]) * 1000))
    ratios = []
    for i, (on, ms) in enumerate(blocks):
        beside = [blocks[j][1] for j in (i - 1, i + 1) if 0 <= j < len(blocks) and not blocks[j][0]]
        if on and beside:
            ratios.append(ms / statistics.mean(beside))
    return {"blocks_ms": blocks, "ratios": ratios, "documents": documents,
            "overhead_pct": 100 * (statistics.median(ratios) - 1)}


def stream(build, outdir):
    env = dict(os.environ, MEMTRAIL_DEVICE="sim:8GiB", MEMTRAIL_RECORD="all",
               MEMTRAIL_STACKS="native", MEMTRAIL_MAX_ENTRIES="200000")
    rows = []
    for rate in STREAM_RATES:
        child = subprocess.Popen([os.path.join(build, "bin", "live_event_producer"), str(rate),
                                  str(STREAM_SECONDS)], stdin=subprocess.PIPE,
                                 stdout=subprocess.PIPE, text=True, env=env)
        assert child.stdout.readline().strip() == "READY"
        follower = Follower(build, child.pid, f"{outdir}/stream.{rate}.follow.jsonl")
        time.sleep(0.5)  # attached before the first event is recorded
        live_cost.answer(child)
        produced = json.loads(child.stdout.readline())
        child.wait()
        lines = follower.stop()
        last = lines[-1]
        rows.append({"target": rate,
                     "recorded_per_second": produced["events"] / produced["seconds"],
                     "received_per_second": last["events_received"] / produced["seconds"],
                     "received_events": last["events_received"],
                     "documents": last["document"], "fell_behind": last["fell_behind"],
                     "missed": last["events_missed"], "status": last["status"]})
        print(f"stream: {rate:>9,}/s asked, {rows[-1]['recorded_per_second']:>11,.0f}/s recorded, "
              f"{rows[-1]['received_per_second']:>11,.0f}/s received, "
              f"{last['document']} documents, fell behind {last['fell_behind']}x", flush=True)
    kept_up = [r["recorded_per_second"] for r in rows if r["fell_behind"] == 0]
    return {"rates": rows, "sustained_per_second": max(kept_up) if kept_up else 0}


def main():
    build, outdir = os.path.abspath(sys.argv[1]), sys.argv[2]
    runs = int(sys.argv[3]) if len(sys.argv) > 3 else 4
    parts = sys.argv[4].split(",") if len(sys.argv) > 4 else ["in_process", "stream"]
    os.makedirs(outdir, exist_ok=True)
    summary = {}
    if "in_process" in parts:
        results = []
        for index in range(runs):
            results.append(in_process(build, outdir, index))
            print(f"in-process run {index}: viewer attached {results[-1]['overhead_pct']:+.2f}% "
                  f"against the unattached blocks beside them "
                  f"({results[-1]['documents']} documents made; block ratios "
                  f"{[round(r, 4) for r in results[-1]['ratios']]})", flush=True)
        summary["in_process"] = {"runs": results,
                                 "pooled": pooled([r["ratios"] for r in results])}
    if "stream" in parts:
        summary["stream"] = stream(build, outdir)
    with open(os.path.join(outdir, "viewer_attach_cost.json"), "w") as f:
        json.dump(summary, f, indent=1)
    if summary.get("in_process", {}).get("pooled"):
        print("viewer attached, in one process: " + describe(summary["in_process"]["pooled"]))
    if "stream" in summary:
        print(f"viewer keeps up with {summary['stream']['sustained_per_second']:,.0f} events/s "
              "without falling behind")


if __name__ == "__main__":
    main()
