"""Garbage collection by memory pressure: a reference cycle that owns a large block of the
simulated device no longer makes the next allocation fail, at the level R's torch would pick.
Each case runs in a fresh interpreter (memtrail's state is per process) with Python's automatic
collection off, so only memtrail's collections free cycles.
Run by ctest with MEMTRAIL_LIBRARY, MEMTRAIL_CLI and PYTHONPATH set; argument: an output folder."""

import os
import pickle
import subprocess
import sys
import textwrap
import unittest
from pathlib import Path

OUTPUT = Path(sys.argv.pop(1)) / "python_memory_pressure"

# A block owned by an object in a reference cycle: only a collection frees it.
PRELUDE = textwrap.dedent("""
    import gc, json, sys
    import memtrail
    gc.disable()
    MiB = 1 << 20

    class Cycle:
        def __init__(self, size):
            self.address = memtrail.caching_allocator_alloc(size)
            self.itself = self

        def __del__(self):
            memtrail.caching_allocator_delete(self.address)

    def report(**extra):
        print(json.dumps(dict(memtrail.gc_stats(), num_ooms=memtrail.memory_stats()["num_ooms"],
                              **extra)))
""")


def run(body: str, device: str = "sim:1GiB") -> dict:
    """Runs PRELUDE + body in a fresh interpreter; what its report() printed."""
    import json
    environment = dict(os.environ, MEMTRAIL_DEVICE=device)
    done = subprocess.run([sys.executable, "-c", PRELUDE + textwrap.dedent(body)],
                          env=environment, capture_output=True, text=True, timeout=120)
    if done.returncode != 0:
        raise AssertionError(f"the case failed:\n{done.stdout}\n{done.stderr}")
    return json.loads(done.stdout.strip().splitlines()[-1])


class MemoryPressureTest(unittest.TestCase):
    def test_a_cycle_holding_a_large_block_no_longer_causes_an_oom(self) -> None:
        snapshot = OUTPUT / "cycle.pickle"
        result = run(f"""
            memtrail.record_memory_history()
            Cycle(600 * MiB)       # unreachable, but not freed without a collection
            kept = Cycle(600 * MiB)
            memtrail.dump_snapshot({str(snapshot)!r})
            report()
        """)
        # reserved/total 0.59 >= 0.2 and allocated/reserved 1.0 >= 0.8: a full collection.
        self.assertEqual(result["full_collections"], 1)
        self.assertEqual(result["light_collections"], 0)
        self.assertGreater(result["objects_collected"], 0)
        self.assertGreater(result["collection_seconds"], 0)
        self.assertEqual(result["num_ooms"], 0)
        with open(snapshot, "rb") as f:
            stages = [(a["stage"], a["name"]) for a in pickle.load(f)["external_annotations"]]
        self.assertEqual(stages, [("START", "gc.collect full"), ("END", "gc.collect full")])

    def test_without_the_collector_the_cycle_causes_an_oom(self) -> None:
        result = run("""
            memtrail.memory_pressure.enable(False)
            Cycle(600 * MiB)
            try:
                Cycle(600 * MiB)
                outcome = "allocated"
            except memtrail.OutOfMemoryError:
                outcome = "oom"
            report(outcome=outcome)
        """)
        self.assertEqual(result["outcome"], "oom")
        self.assertEqual(result["full_collections"] + result["light_collections"], 0)

    def test_light_pressure_collects_the_young_generations(self) -> None:
        result = run("""
            memtrail.set_allocator_config("callback_reserved_rate:0.5")
            held = memtrail.caching_allocator_alloc(300 * MiB)
            memtrail.caching_allocator_delete(memtrail.caching_allocator_alloc(300 * MiB))
            # reserved/total 0.59, allocated/total 0.29, allocated/reserved 0.5: light.
            block = memtrail.caching_allocator_alloc(350 * MiB)
            report()
        """)
        self.assertEqual(result["light_collections"], 1)
        self.assertEqual(result["full_collections"], 0)

    def test_no_collection_while_the_device_is_mostly_free(self) -> None:
        result = run("""
            blocks = [memtrail.caching_allocator_alloc(50 * MiB) for _ in range(3)]
            report()
        """)
        self.assertEqual(result["light_collections"] + result["full_collections"], 0)

    def test_thresholds_are_allocator_settings(self) -> None:
        result = run("""
            memtrail.set_allocator_config("callback_reserved_rate:0.01")
            blocks = [memtrail.caching_allocator_alloc(50 * MiB) for _ in range(3)]
            report()
        """)
        self.assertEqual(result["full_collections"], 2)  # the 2nd and 3rd allocations

    def test_one_last_collection_before_an_oom(self) -> None:
        result = run("""
            memtrail.set_allocator_config("callback_reserved_rate:1")  # never on pressure
            Cycle(600 * MiB)
            kept = Cycle(600 * MiB)
            report()
        """)
        self.assertEqual(result["full_collections"], 1)
        # Recovered before failing: no error was thrown, so none is counted (PyTorch's num_ooms
        # counts the errors thrown).
        self.assertEqual(result["num_ooms"], 0)

    def test_an_allocation_that_fails_counts_one_oom_and_writes_one_dump(self) -> None:
        # The last collection ran after the failure was counted and dumped, then the retry
        # failed again: 2 OOMs and 2 dumps for one failed allocation (issue 31).
        folder = OUTPUT / "one_oom"
        folder.mkdir(parents=True, exist_ok=True)
        for old in folder.iterdir():
            old.unlink()
        result = run(f"""
            memtrail.set_allocator_config("callback_reserved_rate:1")  # never on pressure
            memtrail.on_oom({str(folder / "oom-%t.memtrail")!r})
            Cycle(1 * MiB)             # the last collection frees this, too little
            kept = Cycle(600 * MiB)
            try:
                memtrail.caching_allocator_alloc(600 * MiB)
                failed = False
            except memtrail.OutOfMemoryError:
                failed = True
            report(failed=failed)
        """)
        self.assertTrue(result["failed"])
        self.assertEqual(result["full_collections"], 1)
        self.assertEqual(result["num_ooms"], 1)
        self.assertEqual(len(list(folder.glob("oom-*.memtrail"))), 1)


if __name__ == "__main__":
    OUTPUT.mkdir(parents=True, exist_ok=True)
    unittest.main(verbosity=2)
