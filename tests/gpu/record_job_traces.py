"""Record PyTorch allocator traces of the jobs people run every day, each with the model's own
numbers read from its objects, as ground truth for memory by meaning, OOM verdicts and ranks:
FSDP1 and FSDP2 (model built on the GPU, on the CPU, on the meta device; mixed precision; one
rank given more data), DDP, HF `generate()` with a dynamic and a static KV cache, fragmentation
under a memory cap, a CUDA graph's private pool under a cap, a MemPool released with several
segments, and compiled training with PyTorch's own tags (compile context, user metadata).

    python3 record_job_traces.py all OUTDIR          # every workload, one fresh process each
    python3 record_job_traces.py WORKLOAD OUTDIR      # one single-GPU workload
    torchrun --nproc_per_node 2 record_job_traces.py WORKLOAD OUTDIR   # one distributed workload

Each process writes OUTDIR/<name>.pickle (torch.cuda.memory._snapshot()) and OUTDIR/<name>.json:
the workload, the settings, the device's total, memory_stats() at the end and `truth`, the
numbers read from the model's objects (bytes of parameters as held on this rank, of gradients,
optimizer state, DDP's buckets, the KV cache; when each step and each forward call began, in the
trace's clock, microseconds since the epoch). Distributed workloads write one pair per rank,
named <workload>__rank<r>. CONF (environment) is a PYTORCH_CUDA_ALLOC_CONF string; STACKS=all
records C++ frames too.
"""
import json, os, pickle, subprocess, sys, time

GiB, MiB = 1 << 30, 1 << 20
DISTRIBUTED = ["ddp", "fsdp1", "fsdp2_gpu", "fsdp2_cpu", "fsdp2_meta", "fsdp2_mixed",
               "fsdp2_imbalance", "fsdp2_llama", "ddp_gpt2"]
SINGLE = ["generate_dynamic", "generate_static", "oom_cap_fragmentation", "oom_graph_pool",
          "mempool_release", "compile_tags"]


def now_us():
    return int(time.time() * 1_000_000)


def tensor_bytes(t):
    local = t.to_local() if hasattr(t, "to_local") else t
    return local.numel() * local.element_size()


def optimizer_state_bytes(opt):
    import torch
    total = 0
    for state in opt.state.values():
        for value in state.values():
            if isinstance(value, torch.Tensor) and value.is_cuda:
                total += tensor_bytes(value)
    return total


def gradient_bytes(model):
    return sum(tensor_bytes(p.grad) for p in model.parameters() if p.grad is not None)


def parameter_bytes(model):
    return sum(tensor_bytes(p) for p in model.parameters() if p.device.type == "cuda")


def buffer_bytes(model):
    return sum(tensor_bytes(b) for b in model.buffers() if b.device.type == "cuda")


# ---------------------------------------------------------------- distributed training jobs

def transformer(vocab=16000, width=1024, layers=4):
    import torch.nn as nn
    layer = lambda: nn.TransformerEncoderLayer(d_model=width, nhead=16, dim_feedforward=4 * width,
                                               batch_first=True)
    return nn.Sequential(nn.Embedding(vocab, width), *[layer() for _ in range(layers)],
                         nn.Linear(width, vocab))


def distributed_job(workload, outdir, truth, meta):
    import torch
    import torch.distributed as dist
    import torch.nn as nn
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))
    start_recording()
    dist.init_process_group("nccl", device_id=torch.device("cuda", torch.cuda.current_device()))
    torch.manual_seed(0)
    vocab = 16000
    meta.update({"rank": rank, "world_size": world})
    hf = workload in ("fsdp2_llama", "ddp_gpt2")  # Hugging Face models: forward(ids, labels)
    if workload == "fsdp2_llama":
        from torch.distributed.fsdp import fully_shard
        from transformers import LlamaConfig, LlamaForCausalLM
        model = LlamaForCausalLM(LlamaConfig(
            hidden_size=1024, intermediate_size=2816, num_hidden_layers=6, num_attention_heads=16,
            num_key_value_heads=4, vocab_size=vocab, max_position_embeddings=1024)).cuda()
        truth["parameter_bytes_full"] = parameter_bytes(model)
        for layer in model.model.layers:
            fully_shard(layer)
        fully_shard(model)
    elif workload == "ddp_gpt2":
        from transformers import GPT2Config, GPT2LMHeadModel
        model = GPT2LMHeadModel(GPT2Config(n_layer=6, n_head=16, n_embd=1024, vocab_size=vocab,
                                           n_positions=1024)).cuda()
        truth["parameter_bytes_full"] = parameter_bytes(model)
        model = nn.parallel.DistributedDataParallel(model)
    elif workload == "ddp":
        model = transformer(vocab).cuda()
        truth["parameter_bytes_full"] = parameter_bytes(model)
        model = nn.parallel.DistributedDataParallel(model)
    elif workload == "fsdp1":
        from torch.distributed.fsdp import FullyShardedDataParallel
        from torch.distributed.fsdp.wrap import ModuleWrapPolicy
        model = transformer(vocab).cuda()
        truth["parameter_bytes_full"] = parameter_bytes(model)
        model = FullyShardedDataParallel(model, auto_wrap_policy=ModuleWrapPolicy(
            {nn.TransformerEncoderLayer}), device_id=torch.cuda.current_device())
    else:
        from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard
        if workload == "fsdp2_meta":
            with torch.device("meta"):
                model = transformer(vocab)
        elif workload == "fsdp2_cpu":
            model = transformer(vocab)
        else:
            model = transformer(vocab).cuda()
        truth["parameter_bytes_full"] = sum(p.numel() * p.element_size() for p in model.parameters())
        policy = {}
        if workload == "fsdp2_mixed":
            policy["mp_policy"] = MixedPrecisionPolicy(param_dtype=torch.bfloat16,
                                                      reduce_dtype=torch.float32)
        for layer in model[1:-1]:
            fully_shard(layer, **policy)
        fully_shard(model, **policy)
        if workload == "fsdp2_meta":
            model.to_empty(device="cuda")
            with torch.no_grad():
                for p in model.parameters():
                    p.to_local().normal_(0.0, 0.02)
    truth["parameter_bytes"] = parameter_bytes(model)  # as held on this rank (its shard)
    truth["buffer_bytes"] = buffer_bytes(model)
    truth["setup_done_us"] = now_us()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    batch = 4
    if workload == "fsdp2_imbalance" and rank == world - 1:
        batch = 8  # the last rank is given twice the data: its activations are larger
    truth["batch"] = batch
    truth["step_start_us"], truth["backward_start_us"], truth["optimizer_start_us"] = [], [], []
    for step in range(4):
        truth["step_start_us"].append(now_us())
        x = torch.randint(0, vocab, (batch, 512), device="cuda")
        if hf:
            loss = model(input_ids=x, labels=x).loss
        else:
            loss = nn.functional.cross_entropy(model(x).float().view(-1, vocab), x.view(-1))
        truth["backward_start_us"].append(now_us())
        loss.backward()
        if step == 0:
            truth["gradient_bytes"] = gradient_bytes(model)
            if workload.startswith("ddp"):
                logging = model._get_ddp_logging_data()
                truth["ddp_bucket_sizes"] = logging.get("bucket_sizes")
                truth["ddp_gradient_as_bucket_view"] = logging.get("gradient_as_bucket_view")
        truth["optimizer_start_us"].append(now_us())
        opt.step()
        opt.zero_grad(set_to_none=True)
        truth.setdefault("loss", []).append(float(loss))
    truth["optimizer_state_bytes"] = optimizer_state_bytes(opt)
    torch.cuda.synchronize()
    truth["end_us"] = now_us()
    write(outdir, f"{workload}__rank{rank}", meta, truth)
    dist.barrier()
    dist.destroy_process_group()


# ---------------------------------------------------------------- inference

def kv_cache_bytes(cache):
    tensors = []
    for layer in getattr(cache, "layers", []) or []:
        tensors += [getattr(layer, "keys", None), getattr(layer, "values", None)]
    for name in ("key_cache", "value_cache"):
        tensors += list(getattr(cache, name, []) or [])
    seen, total = set(), 0
    for t in tensors:
        if t is not None and hasattr(t, "untyped_storage") and t.is_cuda:
            storage = t.untyped_storage()
            if storage.data_ptr() not in seen:
                seen.add(storage.data_ptr())
                total += storage.nbytes()
    return total


def generate(outdir, truth, meta, implementation):
    import tempfile
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM
    config = LlamaConfig(hidden_size=1024, intermediate_size=2816, num_hidden_layers=8,
                         num_attention_heads=16, num_key_value_heads=4, vocab_size=32000,
                         max_position_embeddings=2048)
    folder = tempfile.mkdtemp()
    LlamaForCausalLM(config).save_pretrained(folder)  # on the CPU, before recording matters
    start_recording()
    model = LlamaForCausalLM.from_pretrained(folder, dtype=torch.bfloat16, device_map="cuda")
    model.eval()
    truth["parameter_bytes"] = parameter_bytes(model)
    truth["buffer_bytes"] = buffer_bytes(model)
    truth["setup_done_us"] = now_us()
    calls = truth["forward_start_us"] = []
    model.register_forward_pre_hook(lambda *_: calls.append(now_us()))
    batch, prompt, new = 4, 256, 128
    ids = torch.randint(0, 32000, (batch, prompt), device="cuda")
    truth["generate_start_us"] = now_us()
    options = {"cache_implementation": "static"} if implementation == "static" else {}
    with torch.no_grad():
        out = model.generate(ids, max_new_tokens=new, min_new_tokens=new, do_sample=False,
                             return_dict_in_generate=True, **options)
    torch.cuda.synchronize()
    truth["generate_end_us"] = now_us()
    truth["kv_cache_bytes"] = kv_cache_bytes(out.past_key_values)
    truth["kv_cache_class"] = type(out.past_key_values).__name__
    head = config.hidden_size // config.num_attention_heads
    truth["kv_cache_bytes_formula"] = (2 * config.num_hidden_layers * batch *
                                       config.num_key_value_heads * (prompt + new) * head * 2)
    truth.update({"batch": batch, "prompt_tokens": prompt, "new_tokens": new,
                  "output_tokens": int(out.sequences.shape[1])})
    del out


# ---------------------------------------------------------------- OOMs and pools

def cap_at(total_bytes):
    import torch
    fraction = total_bytes / torch.cuda.mem_get_info()[1]
    torch.cuda.set_per_process_memory_fraction(fraction)
    return fraction


def oom_cap_fragmentation(truth, meta):
    # 120 segments of 24 MiB, each split into two 12 MiB blocks of which one is freed: 1.4 GiB
    # free in 12 MiB holes, every segment pinned by its live half, and a cap just above what is
    # reserved. A 16 MiB request fits no hole and cannot grow the pool: OOM by fragmentation.
    import torch
    start_recording()
    count = 120
    whole = [torch.empty(24 * MiB, dtype=torch.uint8, device="cuda") for _ in range(count)]
    del whole
    halves = [torch.empty(12 * MiB, dtype=torch.uint8, device="cuda") for _ in range(2 * count)]
    kept = halves[0::2]
    del halves
    reserved = torch.cuda.memory_reserved()
    meta["fraction"] = cap_at(reserved + 8 * MiB)
    truth.update({"cap_bytes": reserved + 8 * MiB, "free_in_holes": count * 12 * MiB,
                  "request": 16 * MiB})
    try:
        torch.empty(16 * MiB, dtype=torch.uint8, device="cuda")
    except torch.OutOfMemoryError as error:
        meta["oom"] = {"message": str(error).splitlines()[0], "request": 16 * MiB}
    del kept


def oom_graph_pool(truth, meta):
    # A captured CUDA graph keeps its private pool (its intermediates, 4 x 256 MiB, cached there);
    # then the program fills what the cap leaves with 256 MiB tensors. Releasing the graph would
    # return its pool's cached segments and let the next request fit.
    import torch
    import torch.nn as nn
    start_recording()
    model = nn.Sequential(*[nn.Linear(8192, 8192, bias=False) for _ in range(4)]).cuda()
    x = torch.randn(8192, 8192, device="cuda")
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side), torch.no_grad():
        model(x)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph), torch.no_grad():
        y = model(x)
    graph.replay()
    torch.cuda.synchronize()
    truth["graph_pool_id"] = list(graph.pool())
    meta["fraction"] = cap_at(4 * GiB)
    truth["cap_bytes"] = 4 * GiB
    held = []
    try:
        while True:
            held.append(torch.empty(256 * MiB, dtype=torch.uint8, device="cuda"))
    except torch.OutOfMemoryError as error:
        meta["oom"] = {"message": str(error).splitlines()[0], "request": 256 * MiB,
                       "held_tensors": len(held)}
    del held, y, graph
    torch.cuda.empty_cache()


def mempool_release(truth, meta):
    # A MemPool that holds large and small segments, made in alternation, destroyed while it
    # still holds them: the order PyTorch frees them in is the parity fact.
    import torch
    start_recording()
    pool = torch.cuda.MemPool()
    kept = []
    with torch.cuda.use_mem_pool(pool):
        for i in range(3):
            kept.append(torch.empty(4 * MiB + i * MiB, dtype=torch.uint8, device="cuda"))
            kept.append(torch.empty(256 << 10, dtype=torch.uint8, device="cuda"))
            kept.append(torch.empty(24 * MiB, dtype=torch.uint8, device="cuda"))
    truth["pool_id"] = list(pool.id)
    del kept
    del pool
    torch.cuda.empty_cache()


def compile_tags(truth, meta):
    # PyTorch's own tags on every entry: the compiled region (compile_context=True), the user's
    # metadata (_set_memory_metadata) and record_function ranges, around compiled AdamW training.
    import torch
    import torch.nn as nn
    torch.cuda.memory._record_memory_history(enabled="all", context="all", stacks="python",
                                             max_entries=10**7, compile_context=True)
    model = nn.Sequential(nn.Linear(1024, 4096), nn.GELU(), nn.Linear(4096, 1024)).cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    compiled = torch.compile(model)
    truth["parameter_bytes"] = parameter_bytes(model)
    truth["step_start_us"], truth["optimizer_start_us"], truth["metadata"] = [], [], []
    for step in range(3):
        truth["step_start_us"].append(now_us())
        tag = f"train step {step}"
        torch.cuda.memory._set_memory_metadata(tag)
        truth["metadata"].append(tag)
        with torch.profiler.record_function(f"step {step}"):
            x = torch.randn(256, 1024, device="cuda")
            loss = compiled(x).square().mean()
            loss.backward()
            truth["gradient_bytes"] = gradient_bytes(model)
            truth["optimizer_start_us"].append(now_us())
            opt.step()
            opt.zero_grad(set_to_none=True)
    torch.cuda.memory._set_memory_metadata("")
    truth["buffer_bytes"] = 0
    truth["optimizer_state_bytes"] = optimizer_state_bytes(opt)


# ---------------------------------------------------------------- one process

def start_recording():
    import torch
    torch.cuda.memory._record_memory_history(enabled="all", context="all",
                                             stacks=os.environ.get("STACKS", "python"),
                                             max_entries=10**7)


def write(outdir, name, meta, truth):
    import torch
    conf = os.environ.get("CONF", "default")
    if conf != "default":
        name += "__" + conf.replace(":", "-").replace(",", "_")
    if os.environ.get("STACKS", "python") != "python":
        name += "__stacks-" + os.environ["STACKS"]
    snapshot = torch.cuda.memory._snapshot()
    with open(os.path.join(outdir, name + ".pickle"), "wb") as f:
        pickle.dump(snapshot, f)
    free, total = torch.cuda.mem_get_info()
    stats = torch.cuda.memory_stats()
    meta.update({"conf": conf, "device_total": total, "device_free_at_end": free,
                 "torch": torch.__version__, "truth": truth, "stats": stats,
                 "trace_entries": sum(len(t) for t in snapshot["device_traces"])})
    with open(os.path.join(outdir, name + ".json"), "w") as f:
        json.dump(meta, f, indent=1)
    print(name, meta["trace_entries"], "entries; peak allocated",
          stats["allocated_bytes.all.peak"], "reserved", stats["reserved_bytes.all.peak"],
          "ooms", stats["num_ooms"], "truth", {k: v for k, v in truth.items()
                                               if not k.endswith("_us")}, flush=True)


def one(workload, outdir):
    if os.environ.get("CONF", "default") != "default":
        os.environ["PYTORCH_CUDA_ALLOC_CONF"] = os.environ["CONF"]
    meta, truth = {"workload": workload, "fraction": 0.0}, {}
    if workload in DISTRIBUTED:
        distributed_job(workload, outdir, truth, meta)
        return
    import torch
    torch.manual_seed(0)
    if workload.startswith("generate_"):
        generate(outdir, truth, meta, workload.split("_")[1])
    else:
        globals()[workload](truth, meta)
    torch.cuda.synchronize()
    write(outdir, workload, meta, truth)


def run_all(outdir):
    me = os.path.abspath(__file__)
    jobs = [(w, {}) for w in SINGLE]
    jobs += [("generate_dynamic", {"STACKS": "all"}),
             ("oom_cap_fragmentation", {"CONF": "expandable_segments:True"})]
    failures = []
    for i in range(0, len(jobs), 2):  # two single-GPU jobs at a time, one per GPU
        running = []
        for gpu, (workload, extra) in enumerate(jobs[i:i + 2]):
            env = dict(os.environ, CUDA_VISIBLE_DEVICES=str(gpu), **extra)
            suffix = "".join(f"__{k}-{v}" for k, v in extra.items()).replace(":", "-")
            log = open(os.path.join(outdir, f"{workload}{suffix}.log"), "w")
            running.append((workload, subprocess.Popen([sys.executable, me, workload, outdir],
                                                       env=env, stdout=log, stderr=subprocess.STDOUT)))
        for workload, process in running:
            if process.wait(timeout=300) != 0:
                failures.append(workload)
    for workload in DISTRIBUTED:
        command = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2",
                   "--master_port", "29533", me, workload, outdir]
        with open(os.path.join(outdir, f"{workload}.log"), "w") as log:
            if subprocess.run(command, stdout=log, stderr=subprocess.STDOUT, timeout=300).returncode:
                failures.append(workload)
    print("failed:", failures or "none", flush=True)


if __name__ == "__main__":
    os.environ.setdefault("NCCL_NVLS_ENABLE", "0")
    os.environ.setdefault("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1")
    if sys.argv[1] == "all":
        run_all(sys.argv[2])
    else:
        one(sys.argv[1], sys.argv[2])
