"""The memtrail Python package on a GPU, with PyTorch (and CuPy where it is installed).

    python3 tests/gpu/python_package.py OUTDIR [MEMTRAIL]   (with the package installed: see run.sh)

MEMTRAIL is the memtrail command whose `run` starts the memtrail_run part (a build's
bin/memtrail, which finds the interposer beside it); without it that part is left out.

Each part runs in a fresh process (an allocator is chosen once per process):
  torch        a training loop on PyTorch's own allocator: torch.cuda.memory_stats()
  memtrail     the same loop after `import memtrail; memtrail.torch.use()`, recording with
               Python stacks and a range per step: memtrail.memory_stats(), a snapshot
  memtrail_run the same loop, unchanged, under `MEMTRAIL run -- python` (when MEMTRAIL has `run`)
  late         memtrail.torch.use() after CUDA started: must raise AllocatorSwitchError
  gc_cycle     a reference cycle holding a large tensor, then another one, with the device
               limited to 1.5 times the tensor: no OOM thanks to gc.collect on memory pressure
  cupy         CuPy's arrays through memtrail.cupy.use() (left out without CuPy)
Requires peak allocated, peak reserved and device allocations of `memtrail` (and
`memtrail_run`) to equal PyTorch's, and the snapshot to carry this file's Python frames and the
step ranges. Prints a report and writes OUTDIR/python_package.json; exits 1 on a failed check."""

import json
import os
import pickle
import subprocess
import sys
from pathlib import Path

STEPS = 12
COMPARED = ("allocated_bytes.all.peak", "reserved_bytes.all.peak", "num_device_alloc")


def training_loop(step_range=None) -> None:
    import torch
    import torch.nn as nn

    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(d_model=512, nhead=8, dim_feedforward=2048, batch_first=True)
    model = nn.Sequential(nn.Embedding(16000, 512), nn.TransformerEncoder(layer, num_layers=4),
                          nn.Linear(512, 16000)).cuda()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    generator = torch.Generator(device="cuda").manual_seed(1)
    for step in range(STEPS):
        def one_step() -> None:
            tokens = torch.randint(0, 16000, (8, 256), device="cuda", generator=generator)
            logits = model(tokens)
            loss = nn.functional.cross_entropy(logits.flatten(0, 1), tokens.flatten())
            loss.backward()
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)

        if step_range is None:
            one_step()
        else:
            with step_range(f"step {step}"):
                one_step()
    torch.cuda.synchronize()


def part_torch(out: Path) -> dict:
    import torch

    training_loop()
    stats = torch.cuda.memory_stats()
    return {name: stats[name] for name in COMPARED}


def part_memtrail(out: Path) -> dict:
    import memtrail

    memtrail.torch.use()
    memtrail.record_memory_history(stacks="all")
    training_loop(memtrail.range)
    stats = memtrail.memory_stats()
    snapshot = out / "python_package.memtrail"
    memtrail.dump_snapshot(snapshot)
    converted = out / "python_package.pickle"
    subprocess.run([str(memtrail.cli_path()), "export", str(snapshot), "--format", "torch-pickle",
                    "-o", str(converted)], check=True, capture_output=True)
    with open(converted, "rb") as f:
        dumped = pickle.load(f)
    trace = dumped["device_traces"][0]
    ranges = sum(1 for entry in trace if entry["action"] == "user_start")
    python_frames = sum(1 for entry in trace for frame in entry.get("frames", [])
                        if frame["filename"] == os.path.abspath(__file__))
    return {**{name: stats[name] for name in COMPARED}, "ranges": ranges,
            "frames_from_this_file": python_frames, "gc": memtrail.gc_stats()}


def part_memtrail_run(out: Path) -> dict:
    import memtrail

    training_loop()
    stats = memtrail.memory_stats()
    return {name: stats[name] for name in COMPARED}


def part_late(out: Path) -> dict:
    import torch
    import memtrail

    torch.zeros(1, device="cuda")
    try:
        memtrail.torch.use()
    except memtrail.AllocatorSwitchError as error:
        return {"raised": True, "message": str(error)}
    return {"raised": False}


def part_gc_cycle(out: Path) -> dict:
    import gc
    import torch
    import memtrail

    memtrail.torch.use()
    gc.disable()
    size = 8 << 30
    total = torch.cuda.get_device_properties(0).total_memory
    memtrail.set_per_process_memory_fraction(1.5 * size / total)

    class Cycle:
        def __init__(self) -> None:
            self.tensor = torch.empty(size, dtype=torch.uint8, device="cuda")
            self.itself = self

    Cycle()
    try:
        kept = Cycle()
        outcome = "allocated"
        del kept
    except (torch.cuda.OutOfMemoryError, RuntimeError) as error:
        outcome = f"failed: {error}"
    return {"outcome": outcome, "gc": memtrail.gc_stats()}


def part_cupy(out: Path) -> dict:
    import cupy
    import memtrail

    memtrail.cupy.use()
    before = memtrail.memory_allocated()
    array = cupy.ones(64 << 20, dtype=cupy.uint8)
    during = memtrail.memory_allocated()
    total = int(array.sum())
    del array
    return {"allocated_by_cupy": during - before, "sum": total,
            "after_free": memtrail.memory_allocated() - before}


PARTS = {"torch": part_torch, "memtrail": part_memtrail, "memtrail_run": part_memtrail_run,
         "late": part_late, "gc_cycle": part_gc_cycle, "cupy": part_cupy}


def run_part(name: str, out: Path, prefix: list) -> dict:
    done = subprocess.run([*prefix, sys.executable, os.path.abspath(__file__), str(out), name],
                          capture_output=True, text=True, cwd=out)
    (out / f"python_package_{name}.log").write_text(done.stdout + done.stderr)
    if done.returncode != 0:
        return {"error": (done.stderr or done.stdout).strip().splitlines()[-1:]}
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(out: Path, launcher: str) -> int:
    out.mkdir(parents=True, exist_ok=True)
    results = {name: run_part(name, out, []) for name in ("torch", "memtrail", "late", "gc_cycle")}
    if launcher and subprocess.run([launcher, "run", "--help"], capture_output=True).returncode == 0:
        results["memtrail_run"] = run_part("memtrail_run", out, [launcher, "run", "--"])
    if subprocess.run([sys.executable, "-c", "import cupy"], capture_output=True).returncode == 0:
        results["cupy"] = run_part("cupy", out, [])

    failures = []
    for mode in ("memtrail", "memtrail_run"):
        if mode in results:
            for name in COMPARED:
                if results[mode].get(name) != results["torch"].get(name):
                    failures.append(f"{mode} {name}: {results[mode].get(name)} vs PyTorch's "
                                    f"{results['torch'].get(name)}")
    if results["memtrail"].get("ranges") != STEPS:
        failures.append(f"memtrail: {results['memtrail'].get('ranges')} step ranges, not {STEPS}")
    if not results["memtrail"].get("frames_from_this_file"):
        failures.append("memtrail: no Python frames of this file in the snapshot")
    if not results["late"].get("raised"):
        failures.append(f"late use(): {results['late']}")
    if results["gc_cycle"].get("outcome") != "allocated":
        failures.append(f"gc_cycle: {results['gc_cycle']}")
    if "cupy" in results and (results["cupy"].get("allocated_by_cupy", 0) < 64 << 20
                              or results["cupy"].get("after_free") != 0):
        failures.append(f"cupy: {results['cupy']}")

    (out / "python_package.json").write_text(json.dumps(results, indent=2))
    for name, result in results.items():
        print(f"{name:13} {json.dumps(result)}")
    if "memtrail_run" not in results:
        print("memtrail_run  left out: no memtrail command with `run` given")
    if "cupy" not in results:
        print("cupy          left out: CuPy is not installed")
    for failure in failures:
        print(f"FAILED: {failure}")
    return 1 if failures else 0


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[2] in PARTS:
        print(json.dumps(PARTS[sys.argv[2]](Path(sys.argv[1]))))
    elif len(sys.argv) in (2, 3):
        sys.exit(main(Path(sys.argv[1]), sys.argv[2] if len(sys.argv) == 3 else ""))
    else:
        sys.exit(__doc__)
