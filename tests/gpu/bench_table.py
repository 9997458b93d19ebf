"""Markdown tables from bench_side_by_side's JSON (--benchmark_out): medians, side by side.

    python3 tests/gpu/bench_table.py bench_side_by_side.json
"""
import json, re, sys

BACKENDS = ["memtrail", "memtrail_unbiased", "memtrail_recorder", "torch", "cudaMallocAsync", "cudaMalloc"]
TITLES = {"memtrail": "memtrail allocator", "memtrail_unbiased": "memtrail, lock never biased",
          "memtrail_recorder": "memtrail through the recorder (recording off)",
          "torch": "PyTorch caching allocator", "cudaMallocAsync": "cudaMallocAsync",
          "cudaMalloc": "cudaMalloc"}
WORKLOADS = [("pair/{}/512", "alloc+free pair, 512 B"), ("pair/{}/1048576", "alloc+free pair, 1 MiB"),
             ("pair/{}/20971520", "alloc+free pair, 20 MiB"),
             ("random_mix/{}", "random mix step (1000 live, 512 B - 64 MiB)")]


def ns(entry):
    scale = {"ns": 1, "us": 1e3, "ms": 1e6, "s": 1e9}[entry["time_unit"]]
    return entry["real_time"] * scale


def text(value):
    if value is None:
        return "-"
    return f"{value / 1000:.1f} us" if value >= 10_000 else f"{value:.1f} ns"


def main(path):
    with open(path) as f:
        data = json.load(f)
    medians = {}
    for entry in data["benchmarks"]:
        if entry.get("aggregate_name", "median") != "median":
            continue
        name = re.sub(r"/real_time|/threads:\d+", "", entry["run_name"])
        medians[(name, entry.get("threads", 1))] = ns(entry)
    context = data["context"]
    print(f"\n## Allocators side by side ({context.get('date', '')}, {context.get('host_name', '')})\n")
    present = [b for b in BACKENDS if any(k[0].split("/")[1] == b for k in medians)]
    print("Median wall time per operation, one process, one run. With several threads it is Google "
          "Benchmark's: the wall time over the operations of all threads together (8 threads at "
          "100 ns are 10 M operations a second in all).\n")
    for threads in (1, 2, 4, 8):
        print(f"| {threads} thread{'s' if threads > 1 else ''} | " + " | ".join(TITLES[b] for b in present) + " |")
        print("|---" * (len(present) + 1) + "|")
        for pattern, title in WORKLOADS:
            cells = [text(medians.get((pattern.format(b), threads))) for b in present]
            print(f"| {title} | " + " | ".join(cells) + " |")
        print()
    print("Recording, alloc+free pair of 512 B (added: over the same allocator with recording off):\n")
    print("| recording | extra frames 0 | added | extra frames 40 | added |")
    print("|---|---|---|---|---|")
    for owner in ("memtrail", "torch"):
        for setting in ("off", "trace", "frame_pointer_stacks", "libunwind_stacks", "eh_frame_stacks",
                        "cpp_stacks"):
            row = []
            for depth in (0, 40):
                value = medians.get((f"recording_pair_512/{owner}/{setting}/extra_frames:{depth}", 1))
                base = medians.get((f"recording_pair_512/{owner}/off/extra_frames:{depth}", 1))
                row += [text(value), "" if value is None or base is None or setting == "off"
                        else f"+{value - base:.0f} ns"]
            if row[0] != "-":
                print(f"| {owner} {setting.replace('_', ' ')} | " + " | ".join(row) + " |")
    print()
    print("The same from frames built without frame pointers (`recording_pair_512_no_frame_pointers`):\n")
    depths = (0, 16, 32, 64)
    print("| recording | " + " | ".join(f"extra frames {d} | added" for d in depths) + " |")
    print("|---" * (2 * len(depths) + 1) + "|")
    added_without_frame_pointers = {}
    for owner, setting in (("memtrail", "off"), ("memtrail", "libunwind_stacks"),
                           ("memtrail", "eh_frame_stacks"), ("torch", "off"), ("torch", "cpp_stacks")):
        row = []
        for depth in depths:
            value = medians.get((f"recording_pair_512_no_frame_pointers/{owner}/{setting}/extra_frames:{depth}", 1))
            base = medians.get((f"recording_pair_512_no_frame_pointers/{owner}/off/extra_frames:{depth}", 1))
            added = None if value is None or base is None or setting == "off" else value - base
            if added is not None:
                added_without_frame_pointers.setdefault((owner, setting), []).append(added)
            row += [text(value), "" if added is None else f"+{added:.0f} ns"]
        if row[0] != "-":
            print(f"| {owner} {setting.replace('_', ' ')} | " + " | ".join(row) + " |")
    print()
    print_issue_rows(medians, added_without_frame_pointers)


def print_issue_rows(medians, added_without_frame_pointers):
    """The three rows of issue 17, memtrail beside PyTorch from this run."""
    def rate(backend, threads):
        # The time is per operation of all threads together, so its inverse is the aggregate rate.
        value = medians.get((f"pair/{backend}/512", threads))
        return None if value is None else 1e9 / value
    print("Issue 17's rows (memtrail beside PyTorch, this run):\n")
    print("| path | memtrail | PyTorch | goal |")
    print("|---|---|---|---|")
    mix, torch_mix = medians.get(("random_mix/memtrail", 1)), medians.get(("random_mix/torch", 1))
    ratio = f" ({mix / torch_mix:.2f}x)" if mix and torch_mix else ""
    print(f"| random-mix step | {text(mix)}{ratio} | {text(torch_mix)} | at most 0.20x PyTorch's |")
    worst = {key: max(values) for key, values in added_without_frame_pointers.items()}
    eh_frame, torch_stacks = worst.get(("memtrail", "eh_frame_stacks")), worst.get(("torch", "cpp_stacks"))
    print(f"| pair with native stacks, no frame pointers, most added at 0-64 extra frames | "
          f"{'-' if eh_frame is None else f'+{eh_frame:.0f} ns'} (eh_frame) | "
          f"{'-' if torch_stacks is None else f'+{torch_stacks:.0f} ns'} (C++ stacks) | at most +250 ns |")
    one, eight, torch_eight = rate("memtrail", 1), rate("memtrail", 8), rate("torch", 8)
    def per_second(value):
        return "-" if value is None else f"{value / 1e6:.1f} M/s"
    print(f"| 8 threads, aggregate pairs of 512 B per second | {per_second(eight)} (1 thread: "
          f"{per_second(one)}) | {per_second(torch_eight)} | at least the 1-thread rate |")
    print()


if __name__ == "__main__":
    main(sys.argv[1])
