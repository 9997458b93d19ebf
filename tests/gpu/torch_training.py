"""PyTorch training on memtrail's allocator, beside PyTorch's own, on one GPU.

    python3 tests/gpu/torch_training.py build/lib/librecorder.so build/bin/memtrail OUTDIR

Runs the transformer of shared/tools/torch_parity_traces.py (bf16 autocast, AdamW) four times,
each in a fresh process with the same seed, alternating allocators: PyTorch's caching allocator
without recording; memtrail through torch.cuda.memory.CUDAPluggableAllocator (librecorder.so)
recording every event with native and Python stacks for every event (context "all", stacks
"all"); PyTorch's allocator again; memtrail recording with native stacks of live blocks
(context "state"). Kernels are deterministic (the math attention backend, deterministic
algorithms), so the losses must match bit for bit. Compares the losses, peak allocated bytes,
device allocations, peak reserved and the median step time; checks the Python frames in
memtrail's stacks (forward allocations carry this file's frames, autograd's worker thread keeps
native frames only); exports the snapshot as a PyTorch pickle and runs PyTorch's own
`python -m torch.cuda._memory_viz stats` on it. Writes OUTDIR/training.json, the snapshots and
OUTDIR/memory_viz_stats.txt.
"""
import ctypes, json, os, pickle, statistics, subprocess, sys, time, warnings

STEPS = int(os.environ.get("MEMTRAIL_TRAINING_STEPS", "40"))
# The GPU's clocks climb from idle over the first steps: a longer run skips more of them.
WARMUP, BATCH, SEQ = max(6, STEPS // 6), 8, 512
MODES = ["torch", "memtrail_all", "torch_again", "memtrail_state"]
# What memtrail records in each child mode (context, stacks); None: memtrail allocates, records
# nothing. training_overhead.py uses the others to split recording's cost.
# memtrail_production: the mode to leave on (memtrail run --production, docs/production.md).
RECORDING = {"memtrail_all": (b"all", b"all"), "memtrail_state": (b"state", b"native"),
             "memtrail_production": (b"alloc", b"all"),
             "memtrail_alternate_production": (b"alloc", b"all"),
             "memtrail_alternate_production_native": (b"alloc", b"native"),
             "memtrail_alternate_production_python": (b"alloc", b"python"),
             "memtrail_native": (b"all", b"native"), "memtrail_python": (b"all", b"python"),
             "memtrail_nostacks": (b"none", b"native"), "memtrail_off": None,
             "memtrail_alternate": (b"all", b"all"),
             "memtrail_alternate_native": (b"all", b"native"),
             "memtrail_alternate_python": (b"all", b"python"),
             "memtrail_alternate_nostacks": (b"none", b"native")}
# torch_recording: PyTorch's allocator recording as memtrail_all does, with its own recorder.
# memtrail_alternate* switch recording (everything, or without one kind of stack) off and on in
# blocks of this many steps after the warm-up, in one process: recording's cost without the
# spread between processes.
ALTERNATE_BLOCK = 4


def alternating_blocks(times, recording):
    """Recording's cost in one process: each block of steps recording, against the mean of the
    blocks without on either side of it (so that drifts of the machine cancel), as medians."""
    blocks = []  # (recording, median step in ms), in order
    for start in range(0, len(times), ALTERNATE_BLOCK):
        block = times[start:start + ALTERNATE_BLOCK]
        blocks.append((recording[start], 1000 * statistics.median(block)))
    ratios = []
    for i, (on, ms) in enumerate(blocks):
        neighbours = [blocks[j][1] for j in (i - 1, i + 1) if 0 <= j < len(blocks) and not blocks[j][0]]
        if on and neighbours:
            ratios.append(ms / statistics.mean(neighbours))
    return {"on_ms_median": statistics.median(ms for on, ms in blocks if on),
            "off_ms_median": statistics.median(ms for on, ms in blocks if not on),
            "block_ratios": [round(r, 4) for r in ratios],
            "overhead_pct": round(100 * (statistics.median(ratios) - 1), 2)}


def train(mode, library, snapshot):
    # Deterministic kernels, so that the same seed gives the same losses whichever allocator
    # hands out the memory (atomics in backward passes would otherwise differ run to run).
    os.environ["CUBLAS_WORKSPACE_CONFIG"] = ":4096:8"
    import torch
    import torch.nn as nn

    torch.use_deterministic_algorithms(True, warn_only=True)
    # The fused attention kernels' backward passes accumulate with atomics: the math backend
    # does not.
    torch.backends.cuda.enable_flash_sdp(False)
    torch.backends.cuda.enable_mem_efficient_sdp(False)
    torch.backends.cuda.enable_cudnn_sdp(False)
    warnings.simplefilter("always")
    caught = warnings.catch_warnings(record=True)
    nondeterminism_warnings = caught.__enter__()

    memtrail = None
    if not mode.startswith("torch"):
        allocator = torch.cuda.memory.CUDAPluggableAllocator(library, "memtrail_malloc", "memtrail_free")
        torch.cuda.memory.change_current_allocator(allocator)
        memtrail = ctypes.CDLL(library)
        memtrail.memtrail_record_memory_history.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_size_t]
        memtrail.memtrail_dump_snapshot.argtypes = [ctypes.c_char_p]
        memtrail.memtrail_last_error.restype = ctypes.c_char_p
        if RECORDING[mode] is not None:
            context, stacks = RECORDING[mode]
            if memtrail.memtrail_record_memory_history(b"all", context, stacks, 10_000_000) != 0:
                raise RuntimeError(memtrail.memtrail_last_error().decode())
    if mode == "torch_recording":
        # PyTorch's own recorder with the same information (every event, Python and C++ stacks):
        # what a PyTorch user pays for it today, beside memtrail's cost.
        torch.cuda.memory._record_memory_history(enabled="all", context="all", stacks="all",
                                                 max_entries=10_000_000)
    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(d_model=1024, nhead=16, dim_feedforward=4096, batch_first=True)
    model = nn.Sequential(nn.Embedding(32000, 1024), nn.TransformerEncoder(layer, num_layers=8),
                          nn.Linear(1024, 32000)).cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    gen = torch.Generator(device="cuda").manual_seed(1)
    losses, times, cpu_times, process_cpu_times = [], [], [], []
    recording = []  # per step, for memtrail_alternate*: whether recording was on
    for step in range(STEPS):
        if mode.startswith("memtrail_alternate"):
            on = step < WARMUP or (step - WARMUP) // ALTERNATE_BLOCK % 2 == 0
            if not recording or recording[-1] != on:
                context, stacks = RECORDING[mode]
                if memtrail.memtrail_record_memory_history(b"all" if on else b"off", context, stacks,
                                                           10_000_000) != 0:
                    raise RuntimeError(memtrail.memtrail_last_error().decode())
            recording.append(on)
        torch.cuda.synchronize()
        t0, c0, p0 = time.perf_counter(), time.thread_time(), time.process_time()
        x = torch.randint(0, 32000, (BATCH, SEQ), device="cuda", generator=gen)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            y = model(x)
            loss = nn.functional.cross_entropy(y.float().view(-1, 32000), x.view(-1))
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        cpu_times.append(time.thread_time() - c0)  # the main thread's CPU, before waiting
        process_cpu_times.append(time.process_time() - p0)  # with autograd's worker's
        torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
        losses.append(loss.item())
    caught.__exit__(None, None, None)
    out = {"mode": mode, "losses": losses, "step_ms_median": 1000 * statistics.median(times[WARMUP:]),
           "main_thread_cpu_ms_median": 1000 * statistics.median(cpu_times[WARMUP:]),
           "process_cpu_ms_median": 1000 * statistics.median(process_cpu_times[WARMUP:]),
           "step_ms": [round(1000 * t, 3) for t in times],
           "warnings": sorted({str(w.message)[:200] for w in nondeterminism_warnings})}
    if mode.startswith("memtrail_alternate"):
        out["alternate"] = alternating_blocks(times[WARMUP:], recording[WARMUP:])
        # The same for the CPU time of the process's threads (the main thread's and autograd's)
        # up to the wait for the GPU: recording's own work, without the GPU's and the step's
        # waits, which spread the step times of one process by more than recording costs.
        out["alternate_process_cpu"] = alternating_blocks(process_cpu_times[WARMUP:],
                                                          recording[WARMUP:])
    if mode.startswith("torch"):
        try:
            stats = torch.cuda.memory_stats()
            out.update(peak_allocated=stats["allocated_bytes.all.peak"],
                       peak_reserved=stats["reserved_bytes.all.peak"],
                       device_allocations=stats["num_device_alloc"])
        except RuntimeError as error:
            # Under `memtrail run` PyTorch's allocator is memtrail's (CUDAPluggableAllocator),
            # which PyTorch does not ask for statistics: the snapshot holds them.
            out["memory_stats"] = str(error)[:200]
    elif RECORDING[mode] is not None and snapshot:  # "": timing only (training_overhead.py)
        for path in (snapshot, snapshot.replace(".memtrail", ".pickle")):
            if memtrail.memtrail_dump_snapshot(path.encode()) != 0:
                raise RuntimeError(memtrail.memtrail_last_error().decode())
    print(json.dumps(out), flush=True)


def example_python_part(frames):
    python = [i for i, f in enumerate(frames) if f["filename"].endswith(".py")]
    if not python:
        return []
    first, last = max(python[0] - 2, 0), min(python[-1] + 3, len(frames))
    return [f"{f['name'][:90]} {os.path.basename(f['filename'])}:{f['line']}" for f in frames[first:last]]


def python_frame_check(pickle_path):
    """Which allocations carry Python frames: every forward allocation of the main thread has
    this file's train() among them, and none made on autograd's worker thread has any."""
    with open(pickle_path, "rb") as f:
        trace = pickle.load(f)["device_traces"][0]
    allocs = [e for e in trace if e["action"] == "alloc"]
    is_python = lambda frame: frame["filename"].endswith(".py")
    # Demangled or not, the worker's loop is torch::autograd::Engine::thread_main.
    on_autograd_thread = lambda e: any("Engine" in f["name"] and "thread_main" in f["name"] for f in e["frames"])
    with_python = [e for e in allocs if any(map(is_python, e["frames"]))]
    autograd = [e for e in allocs if on_autograd_thread(e)]
    example = next((e["frames"] for e in with_python if any(f["name"] == "train" for f in e["frames"])), [])
    return {
        "allocations": len(allocs),
        "with_python_frames": len(with_python),
        "with_train_frame": sum(any(f["name"] == "train" and f["filename"] == __file__ for f in e["frames"])
                                for e in with_python),
        "on_autograd_thread": len(autograd),
        "autograd_with_python_frames": sum(any(map(is_python, e["frames"])) for e in autograd),
        # The Python part of a forward allocation's stack, with the native frames around it.
        "example_stack": example_python_part(example),
    }


def main():
    library, cli, outdir = sys.argv[1:4]
    os.makedirs(outdir, exist_ok=True)
    results = {}
    for mode in MODES:
        snapshot = os.path.join(outdir, f"{mode}.memtrail")
        run = subprocess.run([sys.executable, __file__, "--child", mode, library, snapshot],
                             capture_output=True, text=True)
        if run.returncode != 0:
            sys.exit(f"{mode} failed:\n{run.stderr[-3000:]}")
        result = json.loads(run.stdout.strip().splitlines()[-1])
        if not mode.startswith("torch"):
            summary = json.loads(subprocess.run([cli, "summary", snapshot, "--json"], capture_output=True,
                                                text=True, check=True).stdout)["ranks"][0]
            stats = summary["memory_stats"]
            result.update(peak_allocated=stats["allocated_bytes.all.peak"], peak_reserved=stats["reserved_bytes.all.peak"],
                          device_allocations=stats["num_device_alloc"], trace_entries=summary["entries"],
                          dropped=summary["dropped"])
        results[mode] = result
    base = results["torch"]
    baseline_ms = statistics.mean([results["torch"]["step_ms_median"], results["torch_again"]["step_ms_median"]])
    for mode in MODES[1:]:
        r = results[mode]
        r["losses_equal"] = r["losses"] == base["losses"]
        r["max_loss_difference"] = max(abs(a - b) for a, b in zip(r["losses"], base["losses"]))
        r["peak_allocated_equal"] = r["peak_allocated"] == base["peak_allocated"]
        r["step_time_overhead_pct"] = round(100 * (r["step_ms_median"] / baseline_ms - 1), 2)
    results["python_frames"] = python_frame_check(os.path.join(outdir, "memtrail_all.pickle"))

    # The snapshot, exported by memtrail, read by PyTorch's own viewer script.
    exported = os.path.join(outdir, "memtrail_all.exported.pickle")
    subprocess.run([cli, "export", os.path.join(outdir, "memtrail_all.memtrail"), "--format", "torch-pickle",
                    "-o", exported], check=True)
    viz = subprocess.run([sys.executable, "-m", "torch.cuda._memory_viz", "stats", exported],
                         capture_output=True, text=True)
    with open(os.path.join(outdir, "memory_viz_stats.txt"), "w") as f:
        f.write(viz.stdout + viz.stderr)
    results["memory_viz_stats"] = {"returncode": viz.returncode, "lines": len(viz.stdout.splitlines()),
                                   "head": viz.stdout.splitlines()[:12]}

    with open(os.path.join(outdir, "training.json"), "w") as f:
        json.dump(results, f, indent=1)
    for mode in MODES:
        r = results[mode]
        print(f"{mode:15s} step {r['step_ms_median']:.2f} ms  peak allocated {r['peak_allocated']}  "
              f"peak reserved {r['peak_reserved']}  device allocations {r['device_allocations']}  "
              f"final loss {r['losses'][-1]:.6f}"
              + ("" if mode == "torch" else f"  losses equal {r['losses_equal']}  peak equal {r['peak_allocated_equal']}"
                 f"  overhead {r['step_time_overhead_pct']}%"))
    print("python frames:", json.dumps(results["python_frames"], indent=1))
    print("memory_viz stats:", results["memory_viz_stats"]["returncode"], *results["memory_viz_stats"]["head"], sep="\n")
    ok = (all(results[m]["losses_equal"] and results[m]["peak_allocated_equal"] for m in MODES[1:])
          and results["python_frames"]["with_train_frame"] > 0
          and results["python_frames"]["autograd_with_python_frames"] == 0
          and results["memory_viz_stats"]["returncode"] == 0)
    print("training checks:", "ok" if ok else "FAILED")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        train(sys.argv[2], sys.argv[3], sys.argv[4])
    else:
        if len(sys.argv) != 4:
            sys.exit(f"usage: {sys.argv[0]} path/to/librecorder.so path/to/memtrail OUTDIR")
        main()
