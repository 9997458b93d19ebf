"""PyTorch training on memtrail's allocator, beside PyTorch's own, on one GPU.

    python3 tests/gpu/torch_training.py build/lib/librecorder.so build/bin/memtrail OUTDIR

Runs the transformer of shared/tools/torch_parity_traces.py (bf16 autocast, AdamW, deterministic
kernels) four times, each in a fresh process with the same seed: PyTorch's caching allocator
without recording (twice, to show the run is repeatable), then
memtrail through torch.cuda.memory.CUDAPluggableAllocator (librecorder.so) recording every
event with stacks of live blocks (context "state"), then recording stacks for every event
(context "all"). Compares the losses, peak allocated bytes, device allocations, peak reserved and
the median step time, and writes OUTDIR/training.json plus the memtrail snapshots.
"""
import ctypes, json, os, statistics, subprocess, sys, time

STEPS, WARMUP, BATCH, SEQ = 14, 4, 8, 512


def train(mode, library, snapshot):
    # Deterministic kernels, so that the same seed gives the same losses whichever allocator
    # hands out the memory (atomics in backward passes would otherwise differ run to run).
    os.environ["CUBLAS_WORKSPACE_CONFIG"] = ":4096:8"
    import torch
    import torch.nn as nn

    torch.use_deterministic_algorithms(True, warn_only=True)

    memtrail = None
    if not mode.startswith("torch"):
        allocator = torch.cuda.memory.CUDAPluggableAllocator(library, "memtrail_malloc", "memtrail_free")
        torch.cuda.memory.change_current_allocator(allocator)
        memtrail = ctypes.CDLL(library)
        memtrail.memtrail_record_memory_history.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_size_t]
        memtrail.memtrail_dump_snapshot.argtypes = [ctypes.c_char_p]
        memtrail.memtrail_last_error.restype = ctypes.c_char_p
        context = b"state" if mode == "memtrail_state" else b"all"
        if memtrail.memtrail_record_memory_history(b"all", context, b"native", 10_000_000) != 0:
            raise RuntimeError(memtrail.memtrail_last_error().decode())
    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(d_model=1024, nhead=16, dim_feedforward=4096, batch_first=True)
    model = nn.Sequential(nn.Embedding(32000, 1024), nn.TransformerEncoder(layer, num_layers=8),
                          nn.Linear(1024, 32000)).cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    gen = torch.Generator(device="cuda").manual_seed(1)
    losses, times = [], []
    for step in range(STEPS):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        x = torch.randint(0, 32000, (BATCH, SEQ), device="cuda", generator=gen)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            y = model(x)
            loss = nn.functional.cross_entropy(y.float().view(-1, 32000), x.view(-1))
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
        losses.append(loss.item())
    out = {"mode": mode, "losses": losses, "step_ms_median": 1000 * statistics.median(times[WARMUP:])}
    if mode.startswith("torch"):
        stats = torch.cuda.memory_stats()
        out.update(peak_allocated=stats["allocated_bytes.all.peak"], peak_reserved=stats["reserved_bytes.all.peak"],
                   device_allocations=stats["num_device_alloc"])
    else:
        if memtrail.memtrail_dump_snapshot(snapshot.encode()) != 0:
            raise RuntimeError(memtrail.memtrail_last_error().decode())
    print(json.dumps(out), flush=True)


def main():
    library, cli, outdir = sys.argv[1:4]
    os.makedirs(outdir, exist_ok=True)
    results = {}
    for mode in ["torch", "torch_again", "memtrail_state", "memtrail_all"]:
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
    for mode in ["torch_again", "memtrail_state", "memtrail_all"]:
        r = results[mode]
        r["losses_equal"] = r["losses"] == base["losses"]
        r["peak_allocated_equal"] = r["peak_allocated"] == base["peak_allocated"]
        r["step_time_overhead_pct"] = round(100 * (r["step_ms_median"] / base["step_ms_median"] - 1), 2)
    with open(os.path.join(outdir, "training.json"), "w") as f:
        json.dump(results, f, indent=1)
    for mode, r in results.items():
        print(f"{mode:15s} step {r['step_ms_median']:.2f} ms  peak allocated {r['peak_allocated']}  "
              f"peak reserved {r['peak_reserved']}  device allocations {r['device_allocations']}  "
              f"final loss {r['losses'][-1]:.6f}"
              + ("" if mode == "torch" else f"  losses equal {r['losses_equal']}  peak equal {r['peak_allocated_equal']}"
                 f"  overhead {r['step_time_overhead_pct']}%"))


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        train(sys.argv[2], sys.argv[3], sys.argv[4])
    else:
        if len(sys.argv) != 4:
            sys.exit(f"usage: {sys.argv[0]} path/to/librecorder.so path/to/memtrail OUTDIR")
        main()
