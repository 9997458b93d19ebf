#!/usr/bin/env python3
"""`memtrail top` on real PyTorch 2.11 traces leads to the user's own line: the innermost frame
of interest, one line for the plumbing folded between, then the line of the script that recorded
them (tests/gpu/record_job_traces.py, tools/torch_parity_traces.py); one model's weights are one
stack whatever nn.Module._apply's recursion depth; --all-frames shows every frame.

Usage: user_frames_test.py, with MEMTRAIL and TRACES (the unpacked tests/data/traces) set.
"""
import json
import os
import re
import subprocess
import unittest

MEMTRAIL = os.environ["MEMTRAIL"]
TRACES = os.environ["TRACES"]
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


if __name__ == "__main__":
    unittest.main()
