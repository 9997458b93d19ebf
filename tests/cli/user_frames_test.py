#!/usr/bin/env python3
"""`memtrail top` on real PyTorch 2.11 traces leads to the user's own line: the innermost frame
of interest, one line for the plumbing folded between, then the line of the script that recorded
them (tests/gpu/record_job_traces.py, tools/torch_parity_traces.py); one model's weights are one
stack whatever nn.Module._apply's recursion depth; --all-frames shows every frame.

Snapshots written through the Python package before the recorder left the recording machinery
out (libffi, ctypes, memtrail/memory.py) have it dropped on reading: the innermost frame of the
csv, folded and perfetto exports is the user's.

Usage: user_frames_test.py, with MEMTRAIL and TRACE_DIR (the unpacked tests/data/traces) set.
"""
import csv
import json
import os
import pathlib
import pickle
import re
import subprocess
import tempfile
import unittest

import perfetto_proto

MEMTRAIL = os.environ["MEMTRAIL"]
TRACES = os.environ["TRACE_DIR"]
USER_SCRIPT = re.compile(r"/(record_job_traces|torch_parity_traces)\.py:\d+\)$")
FOLDED = re.compile(r"^\.\.\. \d+( to \d+)? frames? of ")


def top(name, *args, count=8):
    out = subprocess.run([MEMTRAIL, "top", os.path.join(TRACES, name), "--json", "-n", str(count),
                          *args], capture_output=True, text=True, check=True)
    return json.loads(out.stdout)["ranks"][0]["stacks"]


class UserFrames(unittest.TestCase):
    def check_leads_to_the_user(self, name, *args):
        stacks = top(name, *args)
        led = 0
        for stack in stacks:
            frames = stack["frames"]
            users = [i for i, f in enumerate(frames) if USER_SCRIPT.search(f)]
            if not users:
                continue  # [no stack recorded], or a thread that runs no code of the script's
            led += 1
            # The innermost frame, at most one folded line, then the script's own line.
            self.assertLessEqual(users[0], 2, frames)
            if users[0] == 2:
                self.assertRegex(frames[1], FOLDED)
            self.assertFalse(any(f.startswith(("_call_impl ", "_wrapped_call_impl ", "_apply "))
                                 for f in frames), frames)
            self.assertFalse(any("unwind::unwind" in f or "_PyEval_EvalFrame" in f
                                 for f in frames), frames)
        self.assertGreater(led, 0, stacks)
        return stacks

    def test_jobs_lead_to_the_scripts_line(self):
        for name in ("oom_graph_pool.pickle", "fsdp2_gpu__rank0.pickle",
                     "generate_dynamic.pickle", "generate_dynamic__stacks-all.pickle",
                     "transformer__default.pickle"):
            for at in ("end", "peak"):
                with self.subTest(trace=name, at=at):
                    self.check_leads_to_the_user(name, "--at", at)

    def test_the_graph_pools_activations_name_the_scripts_lines(self):
        stacks = self.check_leads_to_the_user("oom_graph_pool.pickle")
        self.assertEqual([s["frames"][1] for s in stacks], ["... 5 frames of torch.nn"] * 2)
        self.assertEqual(sorted(s["frames"][2].rsplit(":", 1)[1] for s in stacks),
                         ["245)", "249)"])

    def test_a_models_weights_are_one_stack(self):
        # The transformer's weights are made by .cuda() (torch_parity_traces.py:27): every
        # frame splits them by nn.Module._apply's recursion depth, folded they are one stack.
        def weights(stacks):
            return [s for s in stacks if s["frames"] and s["frames"][0].startswith("<lambda> ")
                    and any(f.endswith("torch_parity_traces.py:27)") for f in s["frames"])]

        folded = weights(top("transformer__default.pickle", "--at", "peak", count=100))
        every = weights(top("transformer__default.pickle", "--at", "peak", "--all-frames",
                            count=100))
        self.assertEqual(len(folded), 1)
        self.assertGreater(len(every), 1)
        self.assertEqual(folded[0]["bytes"], sum(s["bytes"] for s in every))
        self.assertRegex(folded[0]["frames"][1], r"^\.\.\. \d+ to \d+ frames of torch\.nn$")
        self.assertTrue(any(f.startswith("_apply ") for s in every for f in s["frames"]))

    def test_ranks_side_by_side_name_the_users_line(self):
        out = subprocess.run([MEMTRAIL, "top", "--at", "peak", "-n", "3"] +
                             [os.path.join(TRACES, f"fsdp2_imbalance__rank{r}.pickle")
                              for r in (0, 1)],
                             capture_output=True, text=True, check=True).stdout
        header = next(line for line in out.splitlines() if "innermost frame" in line)
        self.assertIn("your code", header)
        rows = [line for line in out.splitlines() if "dropout (" in line]
        self.assertEqual(len(rows), 1, out)
        self.assertRegex(rows[0], r"distributed_job \(\S+/record_job_traces\.py:126\)$")

    def test_cpp_frames_lead_to_the_innermost_operator(self):
        # stacks="all": PyTorch's unwinder, caching allocator and tensor creation are inside
        # the innermost frame shown, the operator (here cuBLAS's workspace).
        stacks = self.check_leads_to_the_user("generate_dynamic__stacks-all.pickle",
                                              "--at", "peak")
        innermost = [s["frames"][0] for s in stacks]
        self.assertIn("at::cuda::setWorkspaceForHandle(cublasContext*, c10::cuda::CUDAStream)",
                      innermost)
        self.assertFalse(any(f.startswith(("at::empty_strided(", "c10::cuda::CUDACachingAllocator"))
                             for f in innermost), innermost)


class RecordingMachinery(unittest.TestCase):
    USER = "step (/work/train.py:3)"

    def test_exports_start_at_the_users_frame(self):
        def frame(name, filename, line=0):
            return {"name": name, "filename": filename, "line": line}

        # Innermost first, as memtrail wrote stacks recorded through its Python package.
        libffi = "/lib/x86_64-linux-gnu/libffi.so.8"
        frames = [frame(libffi + "+0x6f7a", libffi),
                  frame("ffi_call", libffi),
                  frame("_ctypes_callproc", "Python-3.11.7/Modules/_ctypes/callproc.c", 1262),
                  frame("PyCFuncPtr_call", "Python-3.11.7/Modules/_ctypes/_ctypes.c", 4201),
                  frame("caching_allocator_alloc",
                        "/venv/lib/python3.11/site-packages/memtrail/memory.py", 130),
                  frame("step", "/work/train.py", 3),
                  frame("<module>", "/work/train.py", 9)]
        trace = [{"action": "alloc", "addr": 4096, "size": 512, "stream": 0, "time_us": 1,
                  "frames": frames}]
        blocks = [{"address": 4096, "size": 512, "requested_size": 512,
                   "state": "active_allocated", "frames": frames}]
        data = {"segments": [{"device": 0, "address": 4096, "total_size": 512,
                              "allocated_size": 512, "active_size": 512, "requested_size": 512,
                              "stream": 0, "segment_type": "small", "blocks": blocks,
                              "frames": []}],
                "device_traces": [trace]}
        with tempfile.TemporaryDirectory() as folder:
            folder = pathlib.Path(folder)
            path = folder / "python_package.pickle"
            with open(path, "wb") as f:
                pickle.dump(data, f)
            for args in ((), ("--all-frames",)):
                def export(kind, name):
                    subprocess.run([MEMTRAIL, "export", str(path), "--format", kind, "-o",
                                    str(folder / name), *args], check=True, capture_output=True)
                    return (folder / name).read_bytes()

                rows = list(csv.DictReader(export("csv", "t.csv").decode().splitlines()))
                self.assertEqual([r["frame"] for r in rows], [self.USER], args)
                folded = export("folded", "t.folded").decode().splitlines()
                self.assertEqual([line.rsplit(" ", 1)[0] for line in folded],
                                 ["<module> (/work/train.py:9);" + self.USER], args)
                trace = perfetto_proto.read_trace(export("perfetto", "t.perfetto-trace"))
                self.assertEqual([s["name"] for s in trace.slices], ["512B " + self.USER], args)


if __name__ == "__main__":
    unittest.main()
