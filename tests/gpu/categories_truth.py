"""Sets `memtrail categories` beside the model's own numbers on the traces record_job_traces.py
recorded (the `truth` of each json): parameters, gradients, optimizer state, DDP's buckets and
the KV cache, read from the objects, against memtrail's bytes per category at the moment the
truth holds. Prints a markdown table, and exits 1 where a category is off by more than 1% (or
a training step is found in inference).

    python3 tests/gpu/categories_truth.py MEMTRAIL TRACE.pickle...

Moments: a training job at the start of its last optimizer step (parameters, gradients and
optimizer state all alive); `generate()` at its end, before its output is dropped.
"""
import bisect
import json
import pathlib
import pickle
import subprocess
import sys


def categories(memtrail, trace, device, entry):
    out = subprocess.run([memtrail, "categories", str(trace), "--device", str(device), "--at",
                          str(entry), "--json"],
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def entry_before(trace_times, time_us):
    return bisect.bisect_right(trace_times, time_us) - 1


def expectations(truth):
    """(moment's time, {category: (expected bytes, what the truth is)})"""
    if "optimizer_start_us" in truth:
        expected = {"parameter": (truth["parameter_bytes"] + truth["buffer_bytes"],
                                  "parameters held on the rank"),
                    "optimizer_state": (truth["optimizer_state_bytes"], "optimizer.state")}
        gradients, what = truth["gradient_bytes"], "p.grad"
        if truth.get("ddp_bucket_sizes"):
            gradients += sum(int(s) for s in str(truth["ddp_bucket_sizes"]).split(","))
            what = "p.grad + DDP's buckets"
        expected["gradient"] = (gradients, what)
        return truth["optimizer_start_us"][-1], expected
    return truth["generate_end_us"], {
        "parameter": (truth["parameter_bytes"] + truth["buffer_bytes"], "parameters and buffers"),
        "kv_cache": (truth["kv_cache_bytes"], truth["kv_cache_class"])}


def main():
    memtrail, traces = sys.argv[1], [pathlib.Path(p) for p in sys.argv[2:]]
    print("| trace | moment | category | the model's own | memtrail | difference |")
    print("|---|---|---|---|---|---|")
    failures = []
    for trace in traces:
        meta = json.loads(trace.with_suffix(".json").read_text())
        truth = meta["truth"]
        with open(trace, "rb") as f:
            device_traces = pickle.load(f)["device_traces"]
        device = next(d for d, t in enumerate(device_traces) if t)  # a rank records its own GPU
        times = [e["time_us"] for e in device_traces[device]]
        moment, expected = expectations(truth)
        entry = entry_before(times, moment)
        report = categories(memtrail, trace, device, entry)
        # The objects' bytes are what was asked for; blocks round them up.
        ours = {c: d["requested"] for c, d in report["details"].items()}
        for category, (bytes_expected, what) in expected.items():
            got = ours.get(category, 0)
            off = abs(got - bytes_expected) / max(bytes_expected, 1)
            print(f"| {trace.stem} | entry {entry} | {category} ({what}) | {bytes_expected:,} | "
                  f"{got:,} | {off:+.2%} |")
            if off > 0.01:
                failures.append(f"{trace.stem}: {category} {got:,} against {bytes_expected:,}")
        if "generate_end_us" in truth and report["steps"]["source"] != "none":
            failures.append(f"{trace.stem}: training steps found in inference "
                            f"({report['steps']['source']})")
    for failure in failures:
        print("off:", failure, file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
