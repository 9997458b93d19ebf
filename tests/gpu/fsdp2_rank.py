"""One rank of an FSDP2 job, started by torchrun (RANK, LOCAL_RANK, WORLD_SIZE from it), for
tests/gpu/run_ranks.sh: the same job under PyTorch alone, under `memtrail run -- torchrun ...` and
under `torchrun --no-python ... memtrail run python ...`.

    torchrun --nproc-per-node N tests/gpu/fsdp2_rank.py LIBRECORDER OUTDIR LABEL

Rank r trains a transformer sharded with fully_shard on a batch of 4 + 4r sequences (so that the
ranks' peaks differ) for a few steps, then writes OUTDIR/LABEL-rank<r>.json: its allocator's
peak allocated, peak reserved and device allocations, from torch.cuda.memory_stats() under
PyTorch's allocator or from librecorder's memtrail_memory_stats_json() when `memtrail run` made
memtrail PyTorch's allocator (the process has librecorder loaded then), and its losses.
NVLink multicast stays off (NCCL_NVLS_ENABLE=0, set by run_ranks.sh).
"""
import ctypes
import json
import os
import sys

STEPS = 4
KEYS = ("allocated_bytes.all.peak", "reserved_bytes.all.peak", "num_device_alloc")


def main(library, outdir, label):
    import torch
    import torch.distributed as dist
    import torch.nn as nn
    from torch.distributed.fsdp import fully_shard

    rank, local_rank = int(os.environ["RANK"]), int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local_rank)
    dist.init_process_group("nccl", device_id=torch.device("cuda", local_rank))
    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(d_model=1024, nhead=16, dim_feedforward=4096,
                                       batch_first=True)
    model = nn.Sequential(nn.Embedding(32000, 1024), nn.TransformerEncoder(layer, num_layers=4),
                          nn.Linear(1024, 32000)).cuda()
    for block in model[1].layers:
        fully_shard(block)
    fully_shard(model)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    gen = torch.Generator(device="cuda").manual_seed(1 + rank)
    batch, losses = 4 + 4 * rank, []
    for _ in range(STEPS):
        x = torch.randint(0, 32000, (batch, 512), device="cuda", generator=gen)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = nn.functional.cross_entropy(model(x).float().view(-1, 32000), x.view(-1))
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        losses.append(loss.item())
    torch.cuda.synchronize()
    dist.barrier()
    dist.destroy_process_group()
    on_memtrail = "MEMTRAIL_RUN_FILES" in os.environ and os.environ.get("MEMTRAIL_MODE") == "cache"
    if on_memtrail:
        memtrail = ctypes.CDLL(library)
        memtrail.memtrail_memory_stats_json.restype = ctypes.c_char_p
        stats = json.loads(memtrail.memtrail_memory_stats_json(local_rank).decode())
    else:
        stats = torch.cuda.memory_stats()
    result = {"rank": rank, "label": label, "allocator": "memtrail" if on_memtrail else "torch",
              "losses": losses, **{key: stats.get(key) for key in KEYS}}
    with open(os.path.join(outdir, f"{label}-rank{rank}.json"), "w") as f:
        json.dump(result, f)
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main(*sys.argv[1:4])
