"""The same training run seen by PyTorch's memory snapshot and by torch.profiler's memory profiler,
for checking `memtrail categories` against both the model's own numbers and the profiler's.

    python3 tests/gpu/categories_vs_profiler.py transformer|resnet OUTDIR
Writes OUTDIR/run.pickle (torch.cuda.memory._snapshot(), Python stacks) and OUTDIR/profiler.json:
the model's parameter bytes, the profiler's bytes per category (its MemoryProfileTimeline) over
the run and at its peak, and the times of a mark recorded after each optimizer step.
The models are shared/tools/torch_parity_traces.py's: the transformer trained with AdamW, or
ResNet-50 with SGD and momentum, 3 steps each.
"""
import json
import os
import sys

import torch
import torch.nn as nn
from torch.profiler import ProfilerActivity, profile, record_function
from torch.profiler._memory_profiler import MemoryProfileTimeline, _CATEGORY_TO_INDEX

workload, outdir = sys.argv[1], sys.argv[2]
os.makedirs(outdir, exist_ok=True)
torch.manual_seed(0)
torch.cuda.memory._record_memory_history(enabled="all", context="all", stacks="python",
                                         max_entries=10**7)

with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], profile_memory=True,
             record_shapes=True, with_stack=True) as prof:
    if workload == "transformer":
        layer = nn.TransformerEncoderLayer(d_model=1024, nhead=16, dim_feedforward=4096,
                                           batch_first=True)
        model = nn.Sequential(nn.Embedding(32000, 1024),
                              nn.TransformerEncoder(layer, num_layers=8),
                              nn.Linear(1024, 32000)).cuda()
        opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    else:
        import torchvision
        model = torchvision.models.resnet50().cuda()
        opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    for s in range(3):
        if workload == "transformer":
            x = torch.randint(0, 32000, (8, 512), device="cuda")
            with torch.autocast("cuda", dtype=torch.bfloat16):
                y = model(x)
                loss = nn.functional.cross_entropy(y.float().view(-1, 32000), x.view(-1))
        else:
            x = torch.randn(32, 3, 224, 224, device="cuda")
            t = torch.randint(0, 1000, (32,), device="cuda")
            loss = nn.functional.cross_entropy(model(x), t)
        loss.backward()
        opt.step()
        torch.cuda.synchronize()
        with record_function(f"memtrail_step_end_{s}"):
            pass
        opt.zero_grad(set_to_none=True)
    torch.cuda.synchronize()

snapshot = torch.cuda.memory._snapshot()
torch.cuda.memory._record_memory_history(enabled=None)
with open(os.path.join(outdir, "run.pickle"), "wb") as f:
    import pickle
    pickle.dump(snapshot, f)

names = {index: (category.name.lower() if category is not None else "unknown")
         for category, index in _CATEGORY_TO_INDEX.items()}
timeline = MemoryProfileTimeline(prof._memory_profile())
times, sizes = timeline._coalesce_timeline(torch.device("cuda:0"))


def at(i):
    return {names[k]: int(v) for k, v in enumerate(sizes[i]) if k in names}


peak = max(range(len(times)), key=lambda i: sum(sizes[i]))
# The step-end marks on the profiler's own clock, for finding the samples just before them.
marks = sorted((e.name, e.time_range.start, e.time_range.end) for e in prof.events()
               if e.name.startswith("memtrail_step_end_"))
parameters = sum(p.numel() * p.element_size() for p in model.parameters())
result = {"parameter_bytes": parameters, "torch": torch.__version__,
          "device": torch.cuda.get_device_name(0), "categories": [names[k] for k in sorted(names)],
          "peak": at(peak), "peak_total": int(sum(sizes[peak])), "peak_index": peak,
          "marks": marks, "times": [int(t) for t in times],
          "sizes": [[int(v) for v in row] for row in sizes]}
with open(os.path.join(outdir, "profiler.json"), "w") as f:
    json.dump(result, f)
print(json.dumps({k: v for k, v in result.items() if k not in ("times", "sizes")}, indent=1))
print("times", times[:3], times[-3:])
