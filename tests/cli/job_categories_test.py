"""Memory by meaning on the jobs people run, against the model's own numbers: real traces of
FSDP1, FSDP2 (model built on the GPU, the CPU, the meta device; mixed precision; HF Llama), DDP
(and on HF GPT-2) and HF generate() with a dynamic and a static cache, recorded on H200s by
tests/gpu/record_job_traces.py with the bytes read from the objects (parameters, gradients,
optimizer state, DDP's buckets, the KV cache) in each trace's json.

Environment: MEMTRAIL (the binary), TRACE_DIR (the unpacked tests/data/traces/jobs.tar.gz).
"""
import importlib.util
import json
import os
import pathlib
import pickle
import subprocess
import tempfile
import unittest

MEMTRAIL = os.environ["MEMTRAIL"]
TRACES = pathlib.Path(os.environ["TRACE_DIR"])
_spec = importlib.util.spec_from_file_location(
    "categories_truth", pathlib.Path(__file__).parents[1] / "gpu" / "categories_truth.py")
truth_harness = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(truth_harness)

JOBS = sorted(p for p in TRACES.glob("*.pickle")
              if p.stem.split("__")[0] in {"ddp", "fsdp1", "fsdp2_gpu", "fsdp2_cpu", "fsdp2_meta",
                                           "fsdp2_mixed", "fsdp2_imbalance", "generate_dynamic",
                                           "generate_static", "compile_tags", "fsdp2_llama",
                                           "ddp_gpt2"})


def load(trace):
    with open(trace, "rb") as f:
        snapshot = pickle.load(f)
    device = next(d for d, t in enumerate(snapshot["device_traces"]) if t)
    meta = json.loads(trace.with_suffix(".json").read_text())
    return snapshot["device_traces"][device], device, meta["truth"]


def written(snapshot, folder, name):
    """`snapshot` as a PyTorch pickle in `folder`; its path."""
    path = pathlib.Path(folder) / name
    with open(path, "wb") as f:
        pickle.dump(snapshot, f)
    return path


def categories(trace, device, at):
    return truth_harness.categories(MEMTRAIL, trace, device, at)


def rule_blocks(report, evidence_start):
    return sum(r["blocks"] for r in report["rules"] if r["evidence"].startswith(evidence_start))


def rule_bytes(report, evidence_start):
    return sum(r["bytes"] for r in report["rules"] if r["evidence"].startswith(evidence_start))


# Where FSDP makes room for all-gathered parameters (FSDP2's all-gather outputs, FSDP1's flat
# parameter through torch.distributed's _alloc_storage), past frames every resize goes through.
UNSHARDED_MAKERS = {"init_all_gather_outputs", "alloc_storage", "_alloc_storage"}
PLUMBING = ("torch/storage.py", "torch/utils/_contextlib.py", "torch/_utils.py")


def makes_unsharded_parameters(entry):
    for frame in entry.get("frames", []):
        if frame["filename"].endswith(".py") and not frame["filename"].endswith(PLUMBING):
            return frame["name"] in UNSHARDED_MAKERS and "torch/distributed" in frame["filename"]
    return False


class JobCategories(unittest.TestCase):
    def test_the_traces_are_here(self):
        self.assertEqual(len(JOBS), 22, [p.name for p in JOBS])

    def test_every_job_matches_the_models_own_numbers(self):
        for trace in JOBS:
            entries, device, truth = load(trace)
            moment, expected = truth_harness.expectations(truth)
            at = truth_harness.entry_before([e["time_us"] for e in entries], moment)
            report = categories(trace, device, at)
            for category, (bytes_expected, what) in expected.items():
                got = report["details"][category]["requested"]
                with self.subTest(trace=trace.stem, category=category):
                    self.assertLessEqual(abs(got - bytes_expected), bytes_expected // 100,
                                         f"{what}: {got:,} against {bytes_expected:,}")

    def test_fsdp_unsharded_parameters_are_collective_at_the_peak(self):
        for trace in (t for t in JOBS if t.stem.startswith("fsdp")):
            entries, device, _ = load(trace)
            report = categories(trace, device, "peak")
            peak = report["at"]["position"]
            live = {}
            for entry in entries[:peak]:
                if entry["action"] == "alloc":
                    live[entry["addr"]] = entry
                elif entry["action"] == "free_requested":
                    live.pop(entry["addr"], None)
            unsharded = sum(1 for e in live.values() if makes_unsharded_parameters(e))
            with self.subTest(trace=trace.stem):
                self.assertGreater(unsharded, 0)
                self.assertEqual(rule_blocks(report, "FSDP's unsharded parameters"), unsharded)
                self.assertEqual(report["contradictions"], [])

    def test_ddp_buckets_are_gradients(self):
        for trace in (t for t in JOBS if t.stem.startswith("ddp")):
            entries, device, truth = load(trace)
            at = truth_harness.entry_before([e["time_us"] for e in entries],
                                            truth["optimizer_start_us"][-1])
            report = categories(trace, device, at)
            buckets = sum(int(s) for s in str(truth["ddp_bucket_sizes"]).split(","))
            with self.subTest(trace=trace.stem):
                self.assertEqual(rule_bytes(report, "DDP's gradient buckets"), buckets)
                self.assertEqual(report["categories"]["unknown"], 0)

    def test_generate_is_inference_with_its_prefill_and_decode_steps(self):
        for trace in (t for t in JOBS if t.stem.startswith("generate")):
            entries, device, truth = load(trace)
            report = categories(trace, device, "end")
            with self.subTest(trace=trace.stem):
                self.assertEqual(report["kind"], "inference")
                self.assertEqual(report["steps"]["source"], "none")
                generation = report["generation"]
                self.assertLess(generation["prefill_begin"], generation["prefill_end"])
                # The prefill makes the first new token; each decode step one more.
                self.assertEqual(len(generation["decode_starts"]), truth["new_tokens"] - 1)
                self.assertTrue(all(generation["prefill_end"] <= d
                                    for d in generation["decode_starts"]))

    def test_a_dynamic_kv_cache_grows_step_by_step(self):
        trace = TRACES / "generate_dynamic.pickle"
        entries, device, truth = load(trace)
        starts = categories(trace, device, "end")["generation"]["decode_starts"]
        sizes = [categories(trace, device, starts[i])["details"]["kv_cache"]["requested"]
                 for i in (1, 40, 80, 120)]
        self.assertEqual(sizes, sorted(sizes))
        self.assertLess(sizes[0], sizes[-1])
        self.assertLessEqual(sizes[-1], truth["kv_cache_bytes"])

    def test_cublas_workspace_named_from_native_frames(self):
        trace = TRACES / "generate_dynamic__stacks-all.pickle"
        entries, device, truth = load(trace)
        at = truth_harness.entry_before([e["time_us"] for e in entries], truth["generate_end_us"])
        report = categories(trace, device, at)
        self.assertEqual(rule_bytes(report, "made by cuBLAS's or cuDNN's workspace code"),
                         32 << 20)
        self.assertEqual(report["categories"]["unknown"], 0)

    def test_the_text_report_names_inference_and_the_phases(self):
        out = subprocess.run([MEMTRAIL, "categories", str(TRACES / "generate_static.pickle"),
                              "--at", "peak"], capture_output=True, text=True, check=True).stdout
        self.assertIn("inference (no backward, no optimizer): no training steps", out)
        self.assertIn("127 decode steps", out)
        self.assertNotIn("training step", out.split("\n", 1)[1])


class PyTorchTags(unittest.TestCase):
    """compile_tags: compiled AdamW training recorded with compile_context=True, the user's
    metadata set per step (_set_memory_metadata) and record_function ranges."""

    def test_summary_lists_each_tag_with_its_entries(self):
        trace = TRACES / "compile_tags.pickle"
        with open(trace, "rb") as f:
            entries = pickle.load(f)["device_traces"][0]
        out = subprocess.run([MEMTRAIL, "summary", str(trace), "--json"], capture_output=True,
                             text=True, check=True)
        tags = {(t["kind"], t["value"]): t for t in json.loads(out.stdout)["ranks"][0]["tags"]}
        for step in range(3):
            value = f"train step {step}"
            carrying = [i for i, e in enumerate(entries) if e["user_metadata"] == value]
            tag = tags[("metadata", value)]
            self.assertEqual(tag["entries"], len(carrying))
            self.assertEqual((tag["first"], tag["last"]), (carrying[0], carrying[-1]))
        compiled = [i for i, e in enumerate(entries)
                    if e["compile_context"] == "Torch-Compiled Region: 0/0"]
        self.assertEqual(tags[("compiled", "Torch-Compiled Region: 0/0")]["entries"], len(compiled))
        text = subprocess.run([MEMTRAIL, "summary", str(trace)], capture_output=True, text=True,
                              check=True).stdout
        self.assertIn("PyTorch's tags on the entries:", text)
        self.assertIn("compiled  Torch-Compiled Region: 0/0", text)

    def test_tag_text_cannot_reach_the_terminal_raw(self):
        # A value with ESC and a newline is printed escaped: it cannot forge a line.
        trace = TRACES / "compile_tags.pickle"
        with open(trace, "rb") as f:
            snapshot = pickle.load(f)
        for e in snapshot["device_traces"][0]:
            if e["user_metadata"] == "train step 1":
                e["user_metadata"] = "step\x1b[2J\nmemtrail: all good"
        with tempfile.TemporaryDirectory() as folder:
            hostile = written(snapshot, folder, "hostile.pickle")
            out = subprocess.run([MEMTRAIL, "summary", str(hostile)], capture_output=True,
                                 text=True, check=True).stdout
        self.assertNotIn("\x1b", out)
        self.assertIn("step\\x1b[2J\\x0amemtrail: all good", out)


class TwoDevicesInOneFile(unittest.TestCase):
    """One process's two GPUs in one snapshot (made from DDP's two ranks): summary reports each."""

    def test_summary_reports_every_device(self):
        with open(TRACES / "ddp__rank0.pickle", "rb") as f:
            snapshot = pickle.load(f)
        with open(TRACES / "ddp__rank1.pickle", "rb") as f:
            other = pickle.load(f)
        snapshot["device_traces"][1] = other["device_traces"][1]
        snapshot["segments"] += [s for s in other["segments"] if s["device"] == 1]
        with tempfile.TemporaryDirectory() as folder:
            path = written(snapshot, folder, "two_devices.pickle")
            text = subprocess.run([MEMTRAIL, "summary", str(path)], capture_output=True,
                                  text=True, check=True).stdout
            report = json.loads(subprocess.run([MEMTRAIL, "summary", str(path), "--json"],
                                               capture_output=True, text=True, check=True).stdout)
            one = json.loads(subprocess.run([MEMTRAIL, "summary", str(path), "--json", "--device",
                                             "1"], capture_output=True, text=True,
                                            check=True).stdout)
        self.assertIn("(PyTorch pickle), device 0, 4547 trace entries", text)
        self.assertIn("(PyTorch pickle), device 1, 4536 trace entries", text)
        self.assertEqual([r["device"] for r in report["ranks"]], [0, 1])
        self.assertEqual([r["device"] for r in one["ranks"]], [1])


if __name__ == "__main__":
    unittest.main()
