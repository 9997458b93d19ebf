"""CUDA graphs with memtrail as PyTorch's allocator, beside PyTorch's own, on one GPU.

    python3 tests/gpu/torch_graphs.py build/lib/librecorder.so OUTDIR

Each run is a fresh process with the same seed:
  - graph training: a training step (forward, backward, SGD step) captured with
    torch.cuda.graph and replayed on fixed batches, under PyTorch's allocator ("torch"), under
    memtrail with libmemtrail_torch_bridge.so (found beside librecorder.so; "memtrail_bridge"),
    and under memtrail through the plain CUDAPluggableAllocator ("memtrail_plain", where
    memtrail finds the capture itself). Between replays, tensors allocated outside the graph are
    filled and checked afterwards: a graph that replayed into memory handed out again would
    overwrite them. The losses must equal PyTorch's bit for bit. Under memtrail the snapshot
    (a PyTorch pickle) must show the graph's private pool, and with the bridge, the pool must be
    gone after the graph is deleted and torch.cuda.empty_cache() is called.
  - reduce-overhead: torch.compile(mode="reduce-overhead") called several times, under PyTorch's
    allocator and under memtrail with the bridge, where PyTorch refuses (CUDA graph trees need
    checkPoolLiveAllocations, which no pluggable allocator has): the run passes when the error
    is that one and explain_pluggable_error of samples/pytorch_pluggable.py explains it.
Writes OUTDIR/graphs.json and prints a summary; exits non-zero when a check fails.
"""
import ctypes, importlib.util, json, os, pickle, subprocess, sys

HERE = os.path.dirname(os.path.abspath(__file__))
STEPS, WARMUP, BATCH, WIDTH = 20, 3, 64, 1024


def load_sample():
    path = os.path.join(HERE, "..", "..", "samples", "pytorch_pluggable.py")
    spec = importlib.util.spec_from_file_location("pytorch_pluggable", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def switch_to_memtrail(library, with_bridge):
    import torch

    allocator = torch.cuda.memory.CUDAPluggableAllocator(library, "memtrail_malloc", "memtrail_free")
    torch.cuda.memory.change_current_allocator(allocator)
    memtrail = ctypes.CDLL(library)
    memtrail.memtrail_dump_snapshot.argtypes = [ctypes.c_char_p]
    memtrail.memtrail_last_error.restype = ctypes.c_char_p
    if memtrail.memtrail_record_memory_history(b"state", b"state", b"native", 0) != 0:
        raise RuntimeError(memtrail.memtrail_last_error().decode())
    if with_bridge and not load_sample().install_torch_bridge(library):
        raise RuntimeError("libmemtrail_torch_bridge.so is not beside " + library)
    return memtrail


def private_pools(memtrail, path):
    """The private pools holding segments now, {pool: bytes}: in a snapshot memtrail dumps, or in
    PyTorch's own (memtrail None)."""
    if memtrail is None:
        import torch
        segments = torch.cuda.memory._snapshot()["segments"]
    else:
        if memtrail.memtrail_dump_snapshot(path.encode()) != 0:
            raise RuntimeError(memtrail.memtrail_last_error().decode())
        with open(path, "rb") as f:
            segments = pickle.load(f)["segments"]
    pools = {}
    for segment in segments:
        pool = tuple(segment.get("segment_pool_id", (0, 0)))
        if pool != (0, 0):
            pools[str(pool)] = pools.get(str(pool), 0) + segment["total_size"]
    return pools


def deterministic_torch():
    os.environ["CUBLAS_WORKSPACE_CONFIG"] = ":4096:8"
    import torch

    torch.use_deterministic_algorithms(True)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    return torch


def graph_training(mode, library, outdir):
    torch = deterministic_torch()
    memtrail = switch_to_memtrail(library, mode == "memtrail_bridge") if mode != "torch" else None
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(WIDTH, 4 * WIDTH), torch.nn.GELU(),
                                torch.nn.Linear(4 * WIDTH, WIDTH)).cuda()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    cpu = torch.Generator().manual_seed(1)
    batches = [(torch.randn(BATCH, WIDTH, generator=cpu), torch.randn(BATCH, WIDTH, generator=cpu))
               for _ in range(STEPS)]
    static_input = torch.zeros(BATCH, WIDTH, device="cuda")
    static_target = torch.zeros(BATCH, WIDTH, device="cuda")

    def step():
        loss = torch.nn.functional.mse_loss(model(static_input), static_target)
        loss.backward()
        optimizer.step()
        return loss

    # Warm up on a side stream, as torch.cuda.graph's documentation does, then capture.
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for data, target in batches[:WARMUP]:
            static_input.copy_(data)
            static_target.copy_(target)
            optimizer.zero_grad(set_to_none=True)
            step()
    torch.cuda.current_stream().wait_stream(side)
    optimizer.zero_grad(set_to_none=True)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        static_loss = step()

    losses, overwritten = [], 0
    for i, (data, target) in enumerate(batches[WARMUP:]):
        # Memory handed out after the capture, filled, must survive the graph's replay.
        outside = torch.full((BATCH * 16, WIDTH), float(i), device="cuda")
        static_input.copy_(data)
        static_target.copy_(target)
        graph.replay()
        losses.append(static_loss.item())
        overwritten += int((outside != float(i)).sum().item())
        del outside
    torch.cuda.synchronize()
    result = {"workload": "graph_training", "mode": mode, "losses": losses,
              "outside_elements_overwritten": overwritten}
    # PyTorch's allocator too: what it keeps of the pool is what memtrail must keep.
    result["pools_with_graph"] = private_pools(memtrail, os.path.join(outdir, f"{mode}.pickle"))
    # The gradients were allocated during the capture, in the graph's pool: drop them too.
    optimizer.zero_grad(set_to_none=True)
    del graph, static_loss
    torch.cuda.synchronize()
    torch.cuda.empty_cache()
    result["pools_after_release"] = private_pools(
        memtrail, os.path.join(outdir, f"{mode}.released.pickle"))
    return result


def reduce_overhead(mode, library, outdir):
    torch = deterministic_torch()
    if mode != "torch":
        switch_to_memtrail(library, with_bridge=True)
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(WIDTH, 4 * WIDTH), torch.nn.GELU(),
                                torch.nn.Linear(4 * WIDTH, WIDTH)).cuda()
    compiled = torch.compile(model, mode="reduce-overhead")
    cpu = torch.Generator().manual_seed(1)
    outputs = []
    try:
        with torch.no_grad():
            for _ in range(6):
                x = torch.randn(BATCH, WIDTH, generator=cpu).cuda()
                outputs.append(float(compiled(x).double().sum().item()))
        torch.cuda.synchronize()
    except Exception as error:  # PyTorch raises RuntimeError or its own subclasses
        explained = load_sample().explain_pluggable_error(error)
        return {"workload": "reduce_overhead", "mode": mode, "refused": str(error)[:400],
                "explained": explained is not error, "message": str(explained)[:600]}
    return {"workload": "reduce_overhead", "mode": mode, "outputs": outputs}


def child(workload, mode, library, outdir):
    run = {"graph_training": graph_training, "reduce_overhead": reduce_overhead}[workload]
    print(json.dumps(run(mode, library, outdir)), flush=True)


RUNS = [("graph_training", "torch"), ("graph_training", "memtrail_bridge"),
        ("graph_training", "memtrail_plain"), ("reduce_overhead", "torch"),
        ("reduce_overhead", "memtrail_bridge")]


def main():
    library, outdir = sys.argv[1:3]
    os.makedirs(outdir, exist_ok=True)
    results, failures = {}, []
    for workload, mode in RUNS:
        run = subprocess.run([sys.executable, __file__, "--child", workload, mode, library, outdir],
                             capture_output=True, text=True)
        name = f"{workload}/{mode}"
        if run.returncode != 0:
            failures.append(f"{name} failed:\n{run.stderr[-3000:]}")
            continue
        results[name] = json.loads(run.stdout.strip().splitlines()[-1])

    base = results.get("graph_training/torch")
    for mode in ("memtrail_bridge", "memtrail_plain"):
        r = results.get(f"graph_training/{mode}")
        if r is None or base is None:
            continue
        if r["losses"] != base["losses"]:
            failures.append(f"graph training on {mode}: losses differ from PyTorch's allocator "
                            f"({r['losses'][:3]}... vs {base['losses'][:3]}...)")
        if r["outside_elements_overwritten"]:
            failures.append(f"graph training on {mode}: the replay overwrote "
                            f"{r['outside_elements_overwritten']} elements allocated outside the graph")
        if not r["pools_with_graph"]:
            failures.append(f"graph training on {mode}: no private pool in the snapshot")
        # Tensors made during the capture (the optimizer's momentum) keep their segments in the
        # pool after the graph is gone; with the bridge memtrail keeps exactly what PyTorch does.
        if mode == "memtrail_bridge" and r["pools_after_release"] != base["pools_after_release"]:
            failures.append(f"graph training on {mode}: the graph's pool after its release differs "
                            f"from PyTorch's ({r['pools_after_release']} vs "
                            f"{base['pools_after_release']})")
        if mode == "memtrail_plain" and r["pools_after_release"] != r["pools_with_graph"]:
            failures.append(f"graph training on {mode}: the capture's pool should be kept "
                            f"({r['pools_with_graph']} before, {r['pools_after_release']} after)")
    refused = results.get("reduce_overhead/memtrail_bridge")
    if refused is not None and "outputs" not in refused and not refused["explained"]:
        failures.append(f"reduce-overhead on memtrail stopped with an unexpected error: {refused['refused']}")

    with open(os.path.join(outdir, "graphs.json"), "w") as f:
        json.dump(results, f, indent=1)
    for name, r in results.items():
        if "losses" in r:
            print(f"{name}: {len(r['losses'])} replays, last loss {r['losses'][-1]:.6f}, "
                  f"outside elements overwritten {r['outside_elements_overwritten']}, "
                  f"private pools {r.get('pools_with_graph', '-')} -> after release "
                  f"{r.get('pools_after_release', '-')}")
        elif "outputs" in r:
            print(f"{name}: {len(r['outputs'])} calls, last output sum {r['outputs'][-1]:.6f}")
        else:
            print(f"{name}: refused by PyTorch; explained: {r['explained']}\n  {r['message']}")
    for failure in failures:
        print("FAILED:", failure)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    if len(sys.argv) == 6 and sys.argv[1] == "--child":
        child(*sys.argv[2:6])
    elif len(sys.argv) == 3:
        main()
    else:
        sys.exit(f"usage: {sys.argv[0]} path/to/librecorder.so OUTDIR")
