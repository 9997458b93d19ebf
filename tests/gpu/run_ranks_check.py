"""The checks of tests/gpu/run_ranks.sh over what it left in OUT.

    python3 tests/gpu/run_ranks_check.py OUT GPUS

For each allocator setting (plain, expandable) and each way memtrail was attached (around:
memtrail run around torchrun; inside: torchrun --no-python memtrail run python): exactly one
snapshot per rank named memtrail-rank<r>-<pid>.memtrail, with the rank's job identity in its
header and the same job id on every rank, none for the launcher, each named in memtrail run's
closing message, and the rank's peak allocated, peak reserved and device allocations equal to
PyTorch's alone (torch/). Prints a table, writes OUT/run_ranks.json, exits 1 when a check fails.
"""
import json
import pathlib
import re
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "support"))
from snapshot_header import snapshot_header  # noqa: E402

KEYS = ("allocated_bytes.all.peak", "reserved_bytes.all.peak", "num_device_alloc")


def rank_results(folder, label, world):
    results = {}
    for rank in range(world):
        path = folder / f"{label}-rank{rank}.json"
        results[rank] = json.loads(path.read_text()) if path.exists() else None
    return results


def check_way(out, conf, way, world, truth):
    folder = out / conf / way
    problems, rows = [], []
    log = (folder / "log.txt").read_text(errors="replace") if (folder / "log.txt").exists() else ""
    snapshots = sorted(p.name for p in folder.glob("*.memtrail"))
    named = {m.group(1): m for m in (re.fullmatch(r"memtrail-rank(\d+)-\d+\.memtrail", n)
                                     for n in snapshots) if m}
    if len(snapshots) != world or sorted(int(r) for r in named) != list(range(world)):
        problems.append(f"{conf}/{way}: expected one memtrail-rank<r>-<pid>.memtrail per rank "
                        f"(and none for the launcher), found {snapshots}")
    job_ids = set()
    measured = rank_results(folder, way, world)
    for rank in range(world):
        match = named.get(str(rank))
        if match is None:
            continue
        name = match.group(0)
        if log.count(f"memtrail: snapshot written to {name}: ") != 1:
            problems.append(f"{conf}/{way}: the closing message does not name {name} once")
        job = snapshot_header(folder / name).get("job") or {}
        job_ids.add(job.get("id"))
        if (job.get("rank"), job.get("local_rank"), job.get("world_size")) != (rank, rank, world):
            problems.append(f"{conf}/{way}: {name} records job {job}")
        mine, theirs = measured[rank], truth[rank]
        if mine is None or theirs is None:
            problems.append(f"{conf}/{way}: rank {rank} wrote no results")
            continue
        if mine["allocator"] != "memtrail":
            problems.append(f"{conf}/{way}: rank {rank} ran on PyTorch's allocator")
        for key in KEYS:
            rows.append((conf, way, rank, key, theirs[key], mine[key]))
            if mine[key] != theirs[key]:
                problems.append(f"{conf}/{way}: rank {rank} {key} {mine[key]} where PyTorch "
                                f"alone has {theirs[key]}")
    if len(job_ids) != 1 or None in job_ids or "" in job_ids:
        problems.append(f"{conf}/{way}: the ranks' job ids are {job_ids}, not one id")
    return problems, rows


def main(out, world):
    problems, rows = [], []
    for conf in ("plain", "expandable"):
        truth = rank_results(out / conf / "torch", "torch", world)
        for way in ("around", "inside"):
            found, table = check_way(out, conf, way, world, truth)
            problems += found
            rows += table
    print(f"{'conf':10} {'way':7} {'rank':>4} {'counter':26} {'PyTorch alone':>15} {'memtrail':>15}")
    for conf, way, rank, key, theirs, mine in rows:
        mark = "" if theirs == mine else "  <- differs"
        print(f"{conf:10} {way:7} {rank:>4} {key:26} {theirs!s:>15} {mine!s:>15}{mark}")
    for problem in problems:
        print("FAIL:", problem)
    print("run_ranks:", "PASS" if not problems else f"{len(problems)} problems")
    with open(out / "run_ranks.json", "w") as f:
        json.dump({"world": world, "rows": rows, "problems": problems}, f, indent=1)
    return 0 if not problems else 1


if __name__ == "__main__":
    sys.exit(main(pathlib.Path(sys.argv[1]), int(sys.argv[2])))
