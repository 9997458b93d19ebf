"""`memtrail run` against PyTorch alone, to the byte, on real workloads; and every byte of the
device accounted for (issue 36, parts 1 and 2).

    python3 tests/gpu/run_exact.py BUILD OUT

For each workload (a small Llama built from transformers' config, no download: `train`, five
AdamW steps; `generate`, greedy generate() with a KV cache), with and without
expandable_segments:True, runs the same child twice: PyTorch alone (its memory_stats()), and
under `BUILD/bin/memtrail run` (the allocator's own counters through librecorder, and the
snapshot's: `memtrail summary --json`). Prints one table and fails on any difference in peak
allocated, peak reserved, peak active, peak requested, num_device_alloc, num_device_free,
allocations and OOMs. Then the accounting check, per snapshot: the allocator's reserved bytes,
the outside allocations by library and the context and other processes add up to the device's
used memory (cudaMemGetInfo) within 2 MiB. Writes OUT/run_exact.json; exit status 1 on any
failure.

PYTORCH_CUDA_ALLOC_CONF is set for both runs; until `memtrail run` reads it (branch
run-settings), the memtrail run also gets MEMTRAIL_ALLOC_CONF (CONF_VIA=pytorch leaves that out,
to check that memtrail reads PyTorch's variable itself). About 2 minutes on an H200.
"""
import ctypes
import json
import os
import subprocess
import sys
import time

MiB = 1 << 20
CONFS = ["", "expandable_segments:True"]
WORKLOADS = ["train", "generate"]
COMPARED = ["allocated_bytes.all.peak", "reserved_bytes.all.peak", "active_bytes.all.peak",
            "requested_bytes.all.peak", "num_device_alloc", "num_device_free",
            "allocation.all.allocated", "num_ooms"]
ACCOUNTING_SLACK = 2 * MiB


def build_model():
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM
    torch.manual_seed(0)
    config = LlamaConfig(hidden_size=1024, intermediate_size=2816, num_hidden_layers=6,
                         num_attention_heads=16, num_key_value_heads=4, vocab_size=32000,
                         max_position_embeddings=1024)
    return LlamaForCausalLM(config).cuda()


def train():
    import torch
    model = build_model()
    model.gradient_checkpointing_enable()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    ids = torch.randint(0, 32000, (4, 512), device="cuda",
                        generator=torch.Generator("cuda").manual_seed(1))
    for _ in range(5):
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = model(ids, labels=ids).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
    torch.cuda.synchronize()


def generate():
    import torch
    model = build_model().to(torch.bfloat16).eval()
    ids = torch.randint(0, 32000, (4, 256), device="cuda",
                        generator=torch.Generator("cuda").manual_seed(1))
    with torch.no_grad():
        model.generate(ids, max_new_tokens=64, min_new_tokens=64, do_sample=False)
    torch.cuda.synchronize()


def child(workload, out, librecorder):
    """Runs one workload and writes its allocator's counters to `out`."""
    import torch
    {"train": train, "generate": generate}[workload]()
    if librecorder:  # under memtrail run: PyTorch's allocator is librecorder's
        library = ctypes.CDLL(librecorder)
        library.memtrail_memory_stats_json.restype = ctypes.c_char_p
        stats = json.loads(library.memtrail_memory_stats_json(0).decode())
    else:
        stats = torch.cuda.memory_stats(0)
    free, total = torch.cuda.mem_get_info(0)
    with open(out, "w") as f:
        json.dump({"stats": {k: stats.get(k) for k in COMPARED},
                   "device_used": total - free}, f)


def run_child(build, out, workload, conf, under_memtrail):
    tag = f"{workload}-{'expandable' if conf else 'default'}-{'memtrail' if under_memtrail else 'pytorch'}"
    result_path = os.path.join(out, tag + ".json")
    env = dict(os.environ, PYTORCH_CUDA_ALLOC_CONF=conf)
    env.pop("MEMTRAIL_ALLOC_CONF", None)
    command = [sys.executable, os.path.abspath(__file__), "--child", workload, result_path]
    snapshot = None
    if under_memtrail:
        if os.environ.get("CONF_VIA", "memtrail") != "pytorch" and conf:
            env["MEMTRAIL_ALLOC_CONF"] = conf
        snapshot = os.path.join(out, tag + ".memtrail")
        command = [os.path.join(build, "bin", "memtrail"), "run", "--dump", snapshot, "--",
                   *command, os.path.join(build, "lib", "librecorder.so")]
    started = time.monotonic()
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)
    seconds = time.monotonic() - started
    if done.returncode != 0:
        raise RuntimeError(f"{tag} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
    with open(result_path) as f:
        result = json.load(f)
    result["seconds"] = round(seconds, 1)
    if snapshot:
        summary = subprocess.run([os.path.join(build, "bin", "memtrail"), "summary", snapshot,
                                  "--json"], capture_output=True, text=True, check=True)
        rank = json.loads(summary.stdout)["ranks"][0]
        result["snapshot_stats"] = {k: rank["memory_stats"].get(k) for k in COMPARED}
        result["accounting"] = rank.get("accounting")
    return result


def accounting_problem(accounting):
    """'' when the parts add up to the device's used memory, else what is wrong."""
    if accounting is None:
        return "the snapshot has no accounting"
    parts = (accounting["allocator_reserved"] + sum(accounting["outside_by_library"].values()) +
             accounting["context"] + accounting["other_processes"])
    gap = accounting["device_used"] - parts
    return "" if abs(gap) <= ACCOUNTING_SLACK else f"parts miss the used memory by {gap} bytes"


def main(build, out):
    os.makedirs(out, exist_ok=True)
    rows, failures = [], []
    for workload in WORKLOADS:
        for conf in CONFS:
            alone = run_child(build, out, workload, conf, False)
            traced = run_child(build, out, workload, conf, True)
            name = f"{workload}, {conf or 'default'}"
            for key in COMPARED:
                values = (alone["stats"][key], traced["stats"][key],
                          traced["snapshot_stats"][key])
                rows.append((name, key) + values)
                if len(set(values)) != 1:
                    failures.append(f"{name}: {key} differs: PyTorch {values[0]}, memtrail "
                                    f"{values[1]}, its snapshot {values[2]}")
            problem = accounting_problem(traced["accounting"])
            if problem:
                failures.append(f"{name}: accounting: {problem}")
            rows.append((name, "accounting", json.dumps(traced["accounting"]), "", ""))
            rows.append((name, "seconds", alone["seconds"], traced["seconds"], ""))
    print(f"{'workload':28} {'counter':26} {'PyTorch':>16} {'memtrail':>16} {'snapshot':>16}")
    for name, key, *values in rows:
        if key == "accounting":
            print(f"{name:28} accounting: {values[0]}")
        else:
            print(f"{name:28} {key:26} " + " ".join(f"{str(v):>16}" for v in values))
    with open(os.path.join(out, "run_exact.json"), "w") as f:
        json.dump({"rows": rows, "failures": failures}, f, indent=1)
    for failure in failures:
        print("FAILED:", failure)
    print("all equal, every byte accounted for" if not failures else
          f"{len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    if len(sys.argv) >= 4 and sys.argv[1] == "--child":
        child(sys.argv[2], sys.argv[3], sys.argv[4] if len(sys.argv) > 4 else "")
    elif len(sys.argv) == 3:
        sys.exit(main(sys.argv[1], sys.argv[2]))
    else:
        sys.exit(__doc__)
