#!/usr/bin/env python3
"""`memtrail segments` agrees with PyTorch's own `_memory_viz.py stats` on PyTorch pickles.

The expected outputs were produced by torch 2.11 on a GPU machine (tests/data/memory_viz);
this test needs no torch. _memory_viz counts blocks waiting for other streams as free, so
its total_free is memtrail's free plus pending free.
"""
import json, os, re, subprocess, sys, unittest

MEMTRAIL = os.environ["MEMTRAIL"]
VIZ_DIR = os.environ["MEMORY_VIZ_DIR"]
TRACE_DIRS = os.environ["TRACE_DIRS"].split(":")


def format_size(num):
    # The formatting _memory_viz uses for its totals.
    for unit in ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei", "Zi"]:
        if abs(num) < 1024.0:
            return f"{num:3.1f}{unit}B"
        num /= 1024.0
    return f"{num:.1f}YiB"


def find_pickle(name):
    for d in TRACE_DIRS:
        path = os.path.join(d, name + ".pickle")
        if os.path.exists(path):
            return path
    return None


class MemoryVizAgreement(unittest.TestCase):
    def test_totals_match(self):
        checked = 0
        for file in sorted(os.listdir(VIZ_DIR)):
            if not file.endswith(".stats.txt"):
                continue
            name = file[: -len(".stats.txt")]
            pickle_path = find_pickle(name)
            self.assertIsNotNone(pickle_path, f"no pickle for {name} in {TRACE_DIRS}")
            text = open(os.path.join(VIZ_DIR, file)).read()
            viz = {k: v for k, v in re.findall(r"^(segments|total_reserved|total_allocated|total_free): (\S+)", text, re.M)}
            out = subprocess.run([MEMTRAIL, "segments", pickle_path, "--json"], capture_output=True, text=True, check=True)
            totals = json.loads(out.stdout)["totals"]
            with self.subTest(trace=name):
                self.assertEqual(int(viz["segments"]), totals["segments"])
                self.assertEqual(viz["total_reserved"], format_size(totals["reserved"]))
                self.assertEqual(viz["total_allocated"], format_size(totals["allocated"]))
                self.assertEqual(viz["total_free"], format_size(totals["free"] + totals["pending_free"]))
            checked += 1
        self.assertGreaterEqual(checked, 4)


if __name__ == "__main__":
    unittest.main()
