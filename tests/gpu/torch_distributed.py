"""torch.distributed on memtrail: one process per GPU, each with memtrail as its allocator.

    python3 tests/gpu/torch_distributed.py build/lib/librecorder.so build/bin/memtrail OUTDIR [RANKS]

Starts RANKS processes (default: every visible GPU, at least 2), NCCL between them. Each rank
takes GPU `rank`, switches PyTorch to librecorder through CUDAPluggableAllocator before its first
CUDA allocation, records every event with Python and native stacks, trains a DistributedDataParallel
transformer (rank r takes a batch of 4 + 4r sequences, so the ranks' peaks differ) and writes
OUTDIR/rank<r>.memtrail. Then `memtrail ranks` opens all the snapshots together and its per-rank
peaks are checked against what each rank's allocator reported at the end of its run
(memtrail_memory_stats). Writes OUTDIR/ranks.txt, OUTDIR/ranks.json and OUTDIR/distributed.json.
NVLink multicast stays off (NCCL_NVLS_ENABLE=0). For comparison runs, DIST_ALLOCATOR=torch keeps
PyTorch's own allocator, and DIST_STACKS (all, native, python, or off for no recording) chooses
what memtrail records. Each rank's output goes to OUTDIR/rank<r>.log.
"""
import ctypes, json, os, subprocess, sys

STEPS = 6


def rank_main(rank, world, library, outdir):
    import torch
    import torch.distributed as dist
    import torch.nn as nn

    use_memtrail = os.environ.get("DIST_ALLOCATOR", "memtrail") == "memtrail"
    stacks = os.environ.get("DIST_STACKS", "all")
    memtrail = None
    if use_memtrail:
        # The allocator is swapped before anything starts CUDA (set_device does).
        allocator = torch.cuda.memory.CUDAPluggableAllocator(library, "memtrail_malloc", "memtrail_free")
        torch.cuda.memory.change_current_allocator(allocator)
        memtrail = ctypes.CDLL(library)
        memtrail.memtrail_record_memory_history.argtypes = [ctypes.c_char_p, ctypes.c_char_p,
                                                            ctypes.c_char_p, ctypes.c_size_t]
        memtrail.memtrail_dump_snapshot.argtypes = [ctypes.c_char_p]
        memtrail.memtrail_last_error.restype = ctypes.c_char_p
        if stacks != "off" and memtrail.memtrail_record_memory_history(
                b"all", b"all", stacks.encode(), 10_000_000) != 0:
            raise RuntimeError(memtrail.memtrail_last_error().decode())
    torch.cuda.set_device(rank)

    dist.init_process_group("nccl", rank=rank, world_size=world, device_id=torch.device("cuda", rank))
    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(d_model=1024, nhead=16, dim_feedforward=4096, batch_first=True)
    model = nn.Sequential(nn.Embedding(32000, 1024), nn.TransformerEncoder(layer, num_layers=4),
                          nn.Linear(1024, 32000)).cuda()
    model = nn.parallel.DistributedDataParallel(model, device_ids=[rank])
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    batch = 4 + 4 * rank
    losses = []
    for _ in range(STEPS):
        x = torch.randint(0, 32000, (batch, 512), device="cuda")
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = nn.functional.cross_entropy(model(x).float().view(-1, 32000), x.view(-1))
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        losses.append(loss.item())
    # DDP keeps the replicas equal: every rank ends with the same parameters.
    checksum = torch.stack([p.detach().float().sum() for p in model.parameters()]).sum()
    sums = [torch.zeros_like(checksum) for _ in range(world)]
    dist.all_gather(sums, checksum)
    torch.cuda.synchronize()
    if memtrail is not None and stacks != "off":
        path = os.path.join(outdir, f"rank{rank}.memtrail")
        if memtrail.memtrail_dump_snapshot(path.encode()) != 0:
            raise RuntimeError(memtrail.memtrail_last_error().decode())
    dist.barrier()
    dist.destroy_process_group()
    print(json.dumps({"rank": rank, "device": torch.cuda.current_device(), "batch": batch, "losses": losses,
                      "replicas_equal": all(float(s) == float(sums[0]) for s in sums)}), flush=True)


def main():
    library, cli, outdir = sys.argv[1:4]
    os.makedirs(outdir, exist_ok=True)
    import torch
    world = int(sys.argv[4]) if len(sys.argv) > 4 else torch.cuda.device_count()
    if world < 2 or torch.cuda.device_count() < world:
        sys.exit(f"needs at least 2 GPUs for {world} ranks; {torch.cuda.device_count()} visible")
    env = dict(os.environ, MASTER_ADDR="127.0.0.1", MASTER_PORT="29517", NCCL_NVLS_ENABLE="0",
               TORCH_SYMM_MEM_DISABLE_MULTICAST="1", NVSHMEM_DISABLE_NVLS="1")
    logs = [open(os.path.join(outdir, f"rank{r}.log"), "w") for r in range(world)]
    ranks = [subprocess.Popen([sys.executable, "-X", "faulthandler", __file__, "--rank", str(r), str(world),
                               library, outdir], env=env, stdout=logs[r], stderr=subprocess.STDOUT, text=True)
             for r in range(world)]
    failed = []
    for r, process in enumerate(ranks):
        process.wait(timeout=300)
        logs[r].close()
        if process.returncode != 0:
            failed.append(r)
    reports = []
    for r in range(world):
        with open(os.path.join(outdir, f"rank{r}.log")) as f:
            text = f.read()
        if r in failed:
            print(f"rank {r} failed (exit {ranks[r].returncode}):\n{text[-4000:]}")
        else:
            reports.append(json.loads(text.strip().splitlines()[-1]))
    if failed:
        sys.exit(1)
    if os.environ.get("DIST_ALLOCATOR", "memtrail") != "memtrail" or os.environ.get("DIST_STACKS") == "off":
        print("distributed run without snapshots: ok")
        sys.exit(0)

    files = [os.path.join(outdir, f"rank{r}.memtrail") for r in range(world)]
    text = subprocess.run([cli, "ranks", *files], capture_output=True, text=True)
    table = subprocess.run([cli, "ranks", *files, "--json"], capture_output=True, text=True)
    with open(os.path.join(outdir, "ranks.txt"), "w") as f:
        f.write(text.stdout + text.stderr)
    with open(os.path.join(outdir, "ranks.json"), "w") as f:
        f.write(table.stdout + table.stderr)
    print(text.stdout + text.stderr)

    # Each snapshot on its own, for the peaks the ranks table must repeat.
    summaries = [json.loads(subprocess.run([cli, "summary", path, "--json", "--device", str(r)],
                                           capture_output=True, text=True, check=True).stdout)
                 for r, path in enumerate(files)]
    results = {"ranks": reports, "summaries": [s["ranks"][0]["memory_stats"]["allocated_bytes.all.peak"]
                                                for s in summaries],
               "ranks_command": {"returncode": text.returncode}}
    with open(os.path.join(outdir, "distributed.json"), "w") as f:
        json.dump(results, f, indent=1)
    peaks = results["summaries"]
    ok = (text.returncode == 0 and table.returncode == 0
          and all(r["device"] == i and r["replicas_equal"] for i, r in enumerate(reports))
          and len(set(peaks)) == len(peaks)
          and all(str(p) in table.stdout for p in peaks))
    print("per-rank peak allocated:", peaks)
    print("distributed checks:", "ok" if ok else "FAILED")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--rank":
        rank_main(int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5])
    else:
        if len(sys.argv) not in (4, 5):
            sys.exit(f"usage: {sys.argv[0]} path/to/librecorder.so path/to/memtrail OUTDIR [RANKS]")
        main()
