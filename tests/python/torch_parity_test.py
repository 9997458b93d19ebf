"""torch.cuda.memory's names as PyTorch 2.11 has them (issue 32, part 4): record_memory_history
takes what torch's _record_memory_history takes (its legacy bool form included), device_count()
is 0 without a device, _snapshot() and memory_snapshot() return PyTorch's dict and segments
(checked against pickles PyTorch 2.11 wrote), mem_get_info() is (free, total).
Run by ctest with MEMTRAIL_DEVICE=sim:2GiB, MEMTRAIL_LIBRARY, MEMTRAIL_CLI, PYTHONPATH and
MEMTRAIL_UNPACKED_TRACES (the real traces) set."""

import os
import pickle
import subprocess
import sys
import unittest
from pathlib import Path

import memtrail

MiB = 1 << 20
TRACES = Path(os.environ["MEMTRAIL_UNPACKED_TRACES"])
# Pickles torch.cuda.memory._snapshot() wrote on H200s (tests/gpu/record_job_traces.py).
TORCH_PICKLES = ("ddp__rank0", "fsdp2_gpu__rank1", "generate_dynamic__stacks-all",
                 "oom_cap_fragmentation", "mempool_release")
BLOCK_STATES = {"active_allocated", "active_pending_free", "inactive"}


def trace() -> list:
    return memtrail._snapshot()["device_traces"][0]


def events() -> list:
    """The trace less the "snapshot" entry each snapshot adds to it, as torch's does."""
    return [entry for entry in trace() if entry["action"] != "snapshot"]


def first(snapshot: dict, action: str) -> dict:
    """The first trace entry of `action`, whichever device recorded it."""
    return next(e for entries in snapshot["device_traces"] for e in entries
                if e["action"] == action)


def allocate_and_free(*sizes: int) -> None:
    for block in [memtrail.caching_allocator_alloc(size) for size in sizes]:
        memtrail.caching_allocator_delete(block)


class RecordMemoryHistoryTest(unittest.TestCase):
    def tearDown(self) -> None:
        memtrail.record_memory_history()
        memtrail.empty_cache()

    def test_true_is_torchs_legacy_form_keeping_one_entry(self) -> None:
        # torch: _record_memory_history(True) records the trace with trace_alloc_max_entries=1.
        memtrail.record_memory_history(True)
        allocate_and_free(MiB, 2 * MiB, 3 * MiB)
        entries = trace()
        self.assertEqual(len(entries), 1, entries)

    def test_legacy_arguments_keep_their_meanings(self) -> None:
        memtrail.record_memory_history(True, trace_alloc_max_entries=100,
                                       trace_alloc_record_context=True)
        memtrail.clear_memory_history()
        allocate_and_free(4 * MiB)
        alloc = next(e for e in trace() if e["action"] == "alloc")
        files = {frame["filename"] for frame in alloc["frames"]}
        self.assertIn(__file__, files)  # stacks of every allocation, Python frames only
        self.assertTrue(all(name.endswith(".py") for name in files), files)

        memtrail.record_memory_history(True, True, 100, True, None, True)  # record_context_cpp
        memtrail.clear_memory_history()
        allocate_and_free(4 * MiB)
        alloc = next(e for e in trace() if e["action"] == "alloc")
        self.assertTrue(any(not f["filename"].endswith(".py") for f in alloc["frames"]))

        memtrail.record_memory_history(False)
        memtrail.clear_memory_history()
        allocate_and_free(4 * MiB)
        self.assertEqual(trace(), [])
        with self.assertRaises(TypeError):
            memtrail.record_memory_history(True, record_context="yes")
        with self.assertRaises(ValueError):
            memtrail.record_memory_history(True, trace_alloc_max_entries=0)

    def test_torchs_arguments_by_position_and_by_name(self) -> None:
        memtrail.record_memory_history("all", "alloc", "python", 2)
        allocate_and_free(MiB, MiB, MiB)
        self.assertEqual(len(trace()), 2)
        memtrail.record_memory_history(enabled="all", context=None, stacks="all",
                                       max_entries=10, device=0, clear_history=True)
        self.assertEqual(events(), [])
        memtrail.record_memory_history(None)
        memtrail.record_memory_history("state")
        for bad in ({"enabled": "True"}, {"compile_context": True},
                    {"global_record_annotations": True}):
            with self.assertRaises(memtrail.BadArgumentError, msg=bad):
                memtrail.record_memory_history(**bad)
        with self.assertRaises(TypeError):
            memtrail.record_memory_history("all", clear_history="no")


class DeviceCountTest(unittest.TestCase):
    def count_with(self, device: str) -> subprocess.CompletedProcess:
        environment = dict(os.environ, MEMTRAIL_DEVICE=device, CUDA_VISIBLE_DEVICES="")
        return subprocess.run([sys.executable, "-c", "import memtrail; print(memtrail.device_count())"],
                              env=environment, capture_output=True, text=True)

    def test_no_device_counts_zero_as_torch_does(self) -> None:
        done = self.count_with("cuda")
        self.assertEqual((done.returncode, done.stdout.strip()), (0, "0"), done.stderr)
        self.assertEqual(memtrail.device_count(), 1)

    def test_a_bad_device_setting_still_raises(self) -> None:
        done = self.count_with("sim:foo")
        self.assertNotEqual(done.returncode, 0)
        self.assertIn("ConfigError", done.stderr)


class SnapshotTest(unittest.TestCase):
    def tearDown(self) -> None:
        memtrail.empty_cache()

    def test_the_dict_has_pytorchs_structure(self) -> None:
        memtrail.record_memory_history()
        blocks = [memtrail.caching_allocator_alloc(size) for size in (5 * MiB, 1000)]
        with self.assertRaises(memtrail.OutOfMemoryError):
            memtrail.caching_allocator_alloc(3 << 30)
        ours = memtrail._snapshot()
        try:
            for name in TORCH_PICKLES:
                with open(TRACES / f"{name}.pickle", "rb") as file:
                    theirs = pickle.load(file)
                self.assertEqual(set(ours), set(theirs), name)
                parts = [("alloc", lambda s: first(s, "alloc"))]
                if theirs["segments"]:
                    parts += [("segment", lambda s: s["segments"][0]),
                              ("block", lambda s: s["segments"][0]["blocks"][0])]
                    self.assertEqual(type(ours["segments"][0]["segment_pool_id"]),
                                     type(theirs["segments"][0]["segment_pool_id"]))
                if name.startswith("oom"):
                    parts.append(("oom", lambda s: first(s, "oom")))
                for level, part in parts:
                    self.assertLessEqual(set(part(theirs)), set(part(ours)), f"{name}: {level}")
            self.assertIn("PYTORCH_CUDA_ALLOC_CONF", ours["allocator_settings"])
            live = [b for s in ours["segments"] for b in s["blocks"]
                    if b["state"] == "active_allocated"]
            self.assertEqual(sorted(b["requested_size"] for b in live), [1000, 5 * MiB])
            self.assertLessEqual({b["state"] for s in ours["segments"] for b in s["blocks"]},
                                 BLOCK_STATES)
            self.assertEqual(sum(s["total_size"] for s in ours["segments"]),
                             memtrail.memory_reserved())
        finally:
            for block in blocks:
                memtrail.caching_allocator_delete(block)

    def test_memory_snapshot_is_the_segments(self) -> None:
        block = memtrail.caching_allocator_alloc(7 * MiB)
        try:
            segments = memtrail.memory_snapshot()
            self.assertEqual(segments, memtrail._snapshot()["segments"])
            self.assertEqual(sum(s["allocated_size"] for s in segments),
                             memtrail.memory_allocated())
            self.assertEqual(memtrail.memory_snapshot(mempool_id=(0, 0)), segments)
            self.assertEqual(memtrail.memory_snapshot((5, 6), include_traces=False), [])
            with self.assertRaises(ValueError):
                memtrail.memory_snapshot(mempool_id=7)
        finally:
            memtrail.caching_allocator_delete(block)


class MemGetInfoTest(unittest.TestCase):
    def test_free_and_total_as_cuda_mem_get_info(self) -> None:
        memtrail.empty_cache()
        free, total = memtrail.mem_get_info()
        self.assertEqual(total, 2 << 30)  # MEMTRAIL_DEVICE=sim:2GiB
        self.assertEqual(free, total - memtrail.memory_reserved())
        block = memtrail.caching_allocator_alloc(30 * MiB)
        memtrail.caching_allocator_delete(block)
        # The cache holds it: taken, as PyTorch's cache is for cudaMemGetInfo.
        self.assertEqual(memtrail.mem_get_info("cuda:0"),
                         (total - memtrail.memory_reserved(), total))
        self.assertLess(memtrail.mem_get_info(0)[0], free)
        memtrail.empty_cache()
        self.assertEqual(memtrail.mem_get_info(), (free, total))
        with self.assertRaises(memtrail.MemtrailError):
            memtrail.mem_get_info(1)


if __name__ == "__main__":
    unittest.main(verbosity=2)
