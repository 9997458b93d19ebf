"""Record PyTorch allocator traces of what people run today, from an empty allocator, for replay
parity and OOM verdicts: CUDA graphs, MemPool, torch.compile(mode="reduce-overhead"), a
transformers model, and OOMs of each cause.

One workload per fresh process (the trace must start with the allocator empty):
    python3 record_modern_traces.py WORKLOAD CONF OUTDIR
CONF is a PYTORCH_CUDA_ALLOC_CONF string or `default`. Writes OUTDIR/<name>.pickle (the
torch.cuda.memory._snapshot() dict) and OUTDIR/<name>.json (the workload, the config, the
per-process memory fraction, the device total, what was held outside PyTorch, memory_stats() at
the end, and the OOM if there was one).
Set STACKS=all for C++ frames too (default python).
"""
import json, os, pickle, sys, time

workload, conf, outdir = sys.argv[1], sys.argv[2], sys.argv[3]
if conf != "default":
    os.environ["PYTORCH_CUDA_ALLOC_CONF"] = conf
import torch
import torch.nn as nn

GiB = 1 << 30
meta = {"workload": workload, "conf": conf, "fraction": 0.0, "outside_bytes": 0}
torch.cuda.memory._record_memory_history(enabled="all", context="all",
                                         stacks=os.environ.get("STACKS", "python"),
                                         max_entries=10**7)
torch.manual_seed(0)


def small_model():
    return nn.Sequential(nn.Linear(1024, 4096), nn.GELU(), nn.Linear(4096, 1024)).cuda()


def cuda_graph():
    # The whole-network capture of PyTorch's CUDA graph docs: warm up on a side stream, capture
    # forward, backward and step, replay with new data copied into the static input.
    model = small_model()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    static_x = torch.randn(64, 1024, device="cuda")
    static_y = torch.randn(64, 1024, device="cuda")
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            opt.zero_grad(set_to_none=True)
            nn.functional.mse_loss(model(static_x), static_y).backward()
            opt.step()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    opt.zero_grad(set_to_none=True)
    with torch.cuda.graph(graph):
        static_loss = nn.functional.mse_loss(model(static_x), static_y)
        static_loss.backward()
        opt.step()
    for _ in range(10):
        static_x.copy_(torch.randn(64, 1024, device="cuda"))
        graph.replay()
    torch.cuda.synchronize()
    meta["loss"] = float(static_loss)
    del graph, static_loss
    torch.cuda.empty_cache()


def mempool():
    pool = torch.cuda.MemPool()
    outside = torch.randn(1 << 20, device="cuda")
    with torch.cuda.use_mem_pool(pool):
        inside = [torch.randn(n, device="cuda") for n in (1 << 18, 1 << 20, 3 << 20, 1 << 10)]
        small = torch.empty(100, device="cuda")
    outside2 = torch.randn(1 << 21, device="cuda")
    del inside[1]
    with torch.cuda.use_mem_pool(pool):
        again = torch.randn(1 << 19, device="cuda")
    del inside, small, again
    meta["pool_id"] = list(pool.id)
    del pool
    torch.cuda.empty_cache()
    del outside, outside2


def compile_reduce_overhead():
    model = small_model()
    compiled = torch.compile(model, mode="reduce-overhead")
    for step in range(6):
        x = torch.randn(32, 1024, device="cuda")
        y = compiled(x)
        y.sum().item()
    torch.cuda.synchronize()


def transformers_model():
    from transformers import GPT2Config, GPT2LMHeadModel
    config = GPT2Config(n_layer=4, n_head=8, n_embd=512, vocab_size=8000, n_positions=256)
    model = GPT2LMHeadModel(config).cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    for _ in range(3):
        ids = torch.randint(0, 8000, (8, 256), device="cuda")
        loss = model(input_ids=ids, labels=ids).loss
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
    torch.cuda.synchronize()
    meta["parameter_bytes"] = sum(p.numel() * p.element_size() for p in model.parameters())


def fill_until_oom(chunk):
    held = []
    try:
        while True:
            held.append(torch.empty(chunk, dtype=torch.uint8, device="cuda"))
    except torch.OutOfMemoryError as error:
        meta["oom"] = {"message": str(error).splitlines()[0], "request": chunk,
                       "held_tensors": len(held)}
    return held


def oom_capacity():
    held = fill_until_oom(2 * GiB)
    del held


def oom_memory_cap():
    meta["fraction"] = 0.05
    torch.cuda.set_per_process_memory_fraction(meta["fraction"])
    held = fill_until_oom(512 << 20)
    del held


def oom_outside():
    # Another user of the device (cudaMalloc outside PyTorch) holds all but about 6 GiB.
    import cupy
    free, total = torch.cuda.mem_get_info()
    outside = max(free - 6 * GiB, 0)
    pointer = cupy.cuda.runtime.malloc(outside)
    meta["outside_bytes"] = outside
    held = fill_until_oom(1 * GiB)
    del held
    cupy.cuda.runtime.free(pointer)


def oom_fragmentation():
    # Fill the device with 2 GiB segments, free them, take 1.5 GiB from each (split), then ask
    # for 1 GiB: about a quarter of the device is free inside segments, in pieces of 0.5 GiB.
    segments = fill_until_oom(2 * GiB)
    count = len(segments)
    filler = fill_until_oom(256 << 20)  # what is left of the device, held throughout
    del segments
    meta.pop("oom", None)
    pieces = [torch.empty(3 * GiB // 2, dtype=torch.uint8, device="cuda") for _ in range(count)]
    try:
        torch.empty(1 * GiB, dtype=torch.uint8, device="cuda")
    except torch.OutOfMemoryError as error:
        meta["oom"] = {"message": str(error).splitlines()[0], "request": 1 * GiB,
                       "held_tensors": len(pieces)}
    del pieces, filler


workloads = {"cuda_graph": cuda_graph, "mempool": mempool,
             "compile_reduce_overhead": compile_reduce_overhead,
             "transformers_model": transformers_model, "oom_capacity": oom_capacity,
             "oom_memory_cap": oom_memory_cap, "oom_outside": oom_outside,
             "oom_fragmentation": oom_fragmentation}
if workload not in workloads:
    raise SystemExit(f"unknown workload {workload}: one of {', '.join(workloads)}")
started = time.time()
workloads[workload]()
torch.cuda.synchronize()

snapshot = torch.cuda.memory._snapshot()
name = f"{workload}__{conf.replace(':', '-').replace(',', '_')}"
if os.environ.get("STACKS", "python") != "python":
    name += "__stacks-" + os.environ["STACKS"]
with open(os.path.join(outdir, name + ".pickle"), "wb") as f:
    pickle.dump(snapshot, f)
free, total = torch.cuda.mem_get_info()
meta.update({"device_total": total, "device_free_at_end": free, "torch": torch.__version__,
             "seconds": round(time.time() - started, 1),
             "trace_entries": sum(len(t) for t in snapshot["device_traces"]),
             "segments": len(snapshot["segments"]), "stats": torch.cuda.memory_stats()})
with open(os.path.join(outdir, name + ".json"), "w") as f:
    json.dump(meta, f, indent=1)
stats = meta["stats"]
print(name, meta["trace_entries"], "entries", meta["segments"], "segments", "peak_alloc",
      stats["allocated_bytes.all.peak"], "peak_reserved", stats["reserved_bytes.all.peak"],
      "retries", stats["num_alloc_retries"], "ooms", stats["num_ooms"], flush=True)
