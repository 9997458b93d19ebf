"""Record a large PyTorch memory snapshot of real training, with Python stacks, for issue 16's
speed targets (a 1M-entry pickle opened by memtrail beside `python -m torch.cuda._memory_viz`).

    python3 tests/gpu/record_large_pickle.py OUT.pickle [ENTRIES]

Trains the transformer of torch_training.py (bf16 autocast, AdamW) on PyTorch's own allocator
with `_record_memory_history(context="all", stacks="python")` until the trace holds ENTRIES
entries (default 1,000,000), then writes `torch.cuda.memory._snapshot()` with pickle protocol 4,
as `torch.cuda.memory._dump_snapshot` does. Prints a JSON line: entries, steps, parameter bytes
and the seconds the dump took.
"""
import json, pickle, sys, time

import torch
import torch.nn as nn

path = sys.argv[1]
wanted = int(sys.argv[2]) if len(sys.argv) > 2 else 1_000_000
torch.cuda.memory._record_memory_history(enabled="all", context="all", stacks="python",
                                         max_entries=wanted)
torch.manual_seed(0)
layer = nn.TransformerEncoderLayer(d_model=1024, nhead=16, dim_feedforward=4096, batch_first=True)
model = nn.Sequential(nn.Embedding(32000, 1024), nn.TransformerEncoder(layer, num_layers=8),
                      nn.Linear(1024, 32000)).cuda()
opt = torch.optim.AdamW(model.parameters(), lr=1e-4)


def train_step():
    x = torch.randint(0, 32000, (8, 512), device="cuda")
    with torch.autocast("cuda", dtype=torch.bfloat16):
        loss = nn.functional.cross_entropy(model(x).float().view(-1, 32000), x.view(-1))
    loss.backward()
    opt.step()
    opt.zero_grad(set_to_none=True)


# Entries per step, from two steps, then enough steps to fill the ring (it keeps the newest).
train_step()
torch.cuda.synchronize()
first = len(torch.cuda.memory._snapshot()["device_traces"][0])
train_step()
torch.cuda.synchronize()
per_step = max(len(torch.cuda.memory._snapshot()["device_traces"][0]) - first, 1)
steps = 2
while steps * per_step < wanted * 1.05:
    train_step()
    steps += 1
torch.cuda.synchronize()
start = time.perf_counter()
snapshot = torch.cuda.memory._snapshot()
with open(path, "wb") as f:
    pickle.dump(snapshot, f, protocol=4)
print(json.dumps({"entries": len(snapshot["device_traces"][0]), "steps": steps,
                  "entries_per_step": per_step,
                  "parameter_bytes": sum(p.numel() * p.element_size() for p in model.parameters()),
                  "dump_seconds": round(time.perf_counter() - start, 2)}))
