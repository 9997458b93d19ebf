"""The device lock's numbers as a table: bench_lock_decision's JSON, one file per build or lock
named on the command line (tests/gpu/lock_decision.sh writes one), side by side with PyTorch's
allocator measured in the same process as each.

    python3 tests/gpu/lock_table.py OUT/lock.md shipped=OUT/lock_shipped.json [other=...]
"""
import json, sys


def rows_by_key(path):
    with open(path) as f:
        data = json.load(f)
    return {(row["allocator"], row["recording"], row["threads"]): row["median_pairs_per_second"]
            for row in data["rows"]}, data


def ratio(mine, theirs):
    return f"{mine / theirs:.2f}x" if theirs else "-"


def table(candidates):
    """Markdown for [(name, path)]: a row per candidate, recording and thread count."""
    lines = []
    header = None
    for name, path in candidates:
        rows, data = rows_by_key(path)
        if header is None:
            header = (f"512 B malloc/free pairs through librecorder's C API, medians of "
                      f"{data['repetitions']} runs of {data['seconds']} s; PyTorch's "
                      f"CUDACachingAllocator in the same process as memtrail (recording: "
                      f"memtrail context all, default stacks; PyTorch context all, C++ stacks).")
            header += (" The bare allocator: core's allocator alone, without librecorder, on the "
                       f"same kind of device ({data.get('bare_device', '-')}).")
            lines += [header, "",
                      "| device lock | recording | threads | memtrail M pairs/s | ns a pair (1 thread) "
                      "| bare allocator M pairs/s | PyTorch M pairs/s | memtrail / PyTorch |",
                      "|---|---|---|---|---|---|---|---|"]
        for recording in ("off", "on"):
            for threads in sorted({k[2] for k in rows if k[0] == "memtrail" and k[1] == recording}):
                mine = rows[("memtrail", recording, threads)]
                theirs = rows.get(("pytorch", recording, threads))
                bare = rows.get(("bare", recording, threads))
                per_pair = f"{1e9 / mine:.0f}" if threads == 1 else ""
                pytorch = f"{theirs / 1e6:.3f}" if theirs else "-"
                bare_rate = f"{bare / 1e6:.3f}" if bare else "-"
                lines.append(f"| {name} | {recording} | {threads} | {mine / 1e6:.3f} | {per_pair} "
                             f"| {bare_rate} | {pytorch} | {ratio(mine, theirs)} |")
    return "\n".join(lines) + "\n"


def main(argv):
    if len(argv) < 3 or any("=" not in a for a in argv[2:]):
        sys.exit("usage: lock_table.py OUT.md NAME=bench_lock_decision.json ...")
    candidates = [tuple(a.split("=", 1)) for a in argv[2:]]
    text = table(candidates)
    with open(argv[1], "w") as f:
        f.write(text)
    print(text, end="")


if __name__ == "__main__":
    main(sys.argv)
