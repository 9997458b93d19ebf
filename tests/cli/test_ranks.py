#!/usr/bin/env python3
"""`memtrail ranks` (and `diff`'s comparison by category) run the way a user would: files
grouped into jobs, one row per rank with the numbers `summary` reports for each file, the ranks
that did the same, and each outlier explained against the median rank. On memtrail snapshots written by
make_test_snapshot, the PyTorch anchors, and real PyTorch 2.11 traces of DDP and FSDP2 jobs
recorded on two H200s (tests/data/traces/jobs.tar.gz) with the recording's own numbers.

Environment: as test_cli.py, and MEMTRAIL_UNPACKED_TRACES (tests/data/traces unpacked at
configure time). Run with `python3 test_ranks.py`.
"""
import json
import os
import pathlib
import subprocess
import tempfile
import unittest

from test_cli import MAKE_TEST_SNAPSHOT, anchors, run, run_json, saved_stats

TRACES = pathlib.Path(os.environ.get("MEMTRAIL_UNPACKED_TRACES", "build/tests/replay/traces"))


class Ranks(unittest.TestCase):
    """`memtrail ranks`: one row per rank with the numbers `summary` reports for each file, files
    grouped into jobs, and each outlier explained against the median rank."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        d = pathlib.Path(cls.tmp.name)
        # Named as one job's ranks, but made by different producers: two jobs.
        cls.rank0, cls.rank1 = d / "job_rank0.mtrail", d / "job_rank1.mtrail"
        subprocess.run([MAKE_TEST_SNAPSHOT, "oom", cls.rank1, d / "rank1.json"], check=True)
        subprocess.run([MAKE_TEST_SNAPSHOT, "random", cls.rank0, d / "rank0.json"], check=True)
        cls.expected = json.loads((d / "rank0.json").read_text())

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def check_against_summary(self, row, path):
        summary = run_json("summary", path)["ranks"][0]
        self.assertEqual(row["path"], str(path))
        self.assertEqual(row["file"], path.name)
        self.assertEqual(row["entries"], summary["entries"])
        for curve in ["allocated", "reserved"]:
            for key in ["bytes", "position", "label"]:
                self.assertEqual(row["peak_" + curve][key], summary["peaks"][curve][key],
                                 f"{path.name} peak {curve} {key}")
        self.assertEqual(row["end_allocated"], summary["totals"]["allocated"])
        self.assertEqual(row["end_reserved"], summary["totals"]["reserved"])
        stats = summary["memory_stats"]
        self.assertEqual(row["allocations"], stats["allocation.all.allocated"])
        self.assertEqual(row["device_allocations"], stats["num_device_alloc"])
        self.assertEqual(row["ooms"], stats["num_ooms"])

    def check_totals(self, job):
        rows = job["ranks"]
        for key in ["peak_allocated", "peak_reserved"]:
            self.assertEqual(job["total"][key], sum(r[key]["bytes"] for r in rows))
        for key in ["end_allocated", "end_reserved", "allocations", "device_allocations",
                    "ooms"]:
            self.assertEqual(job["total"][key], sum(r[key] for r in rows))
        highest = max(rows, key=lambda r: r["peak_reserved"]["bytes"])
        self.assertEqual(job["highest_peak"]["rank"], highest["rank"])
        self.assertEqual(job["highest_peak"]["path"], highest["path"])

    def test_files_of_two_producers_are_two_jobs_with_a_warning(self):
        code, out, err = run("ranks", self.rank1, self.rank0, "--json")
        self.assertEqual(code, 0, err)
        report = json.loads(out)
        jobs = report["jobs"]
        self.assertEqual([[r["rank"] for r in j["ranks"]] for j in jobs], [[1], [0]])
        self.assertEqual(len(report["warnings"]), 1)
        self.assertIn("job_rank0.mtrail is not a rank of the job of job_rank1.mtrail: written by",
                      report["warnings"][0])
        self.assertEqual(err, "memtrail ranks: warning: " + report["warnings"][0] + "\n")
        self.check_against_summary(jobs[0]["ranks"][0], self.rank1)
        self.check_against_summary(jobs[1]["ranks"][0], self.rank0)
        for job in jobs:
            self.check_totals(job)
            self.assertEqual(job["outliers"], [], "one rank: nothing to compare")
            self.assertIsNone(job["explanation"])
        # And against the reference allocator's own numbers.
        rank0 = jobs[1]["ranks"][0]
        self.assertEqual(rank0["peak_allocated"]["bytes"], self.expected["peak_allocated"])
        self.assertEqual(rank0["peak_reserved"]["bytes"], self.expected["peak_reserved"])
        self.assertEqual(jobs[0]["ranks"][0]["ooms"], 1)

    def test_anchors_are_jobs_of_their_own_with_pytorch_counters(self):
        paths = anchors()
        report = run_json("ranks", *paths)
        # Different models: no stack in common.
        self.assertEqual(len(report["jobs"]), len(paths))
        self.assertEqual(len(report["warnings"]), len(paths) - 1)
        for job, path in zip(report["jobs"], paths):
            self.assertEqual([r["rank"] for r in job["ranks"]], [0])
            row = job["ranks"][0]
            self.check_against_summary(row, path)
            stats = saved_stats(path)
            self.assertEqual(row["peak_allocated"]["bytes"], stats["allocated_bytes.all.peak"])
            self.assertEqual(row["peak_reserved"]["bytes"], stats["reserved_bytes.all.peak"])
            self.assertEqual(row["allocations"], stats["allocation.all.allocated"])
            self.assertEqual(row["device_allocations"], stats["num_device_alloc"])
            self.assertGreater(row["peak_allocated"]["since_first_entry_ns"], 0)

    def test_text_has_a_row_per_rank_and_a_total(self):
        rank0, rank1 = TRACES / "fsdp2_imbalance__rank0.pickle", TRACES / "fsdp2_imbalance__rank1.pickle"
        code, out, err = run("ranks", rank1, rank0)
        self.assertEqual((code, err), (0, ""))
        lines = out.splitlines()
        self.assertIn("peak allocated", lines[0])
        # Rows by rank, with the file's name rather than its path.
        self.assertEqual(lines[1].split()[:2], ["0", rank0.name])
        self.assertEqual(lines[2].split()[:2], ["1", rank1.name])
        self.assertTrue(lines[3].startswith("total"), lines[3])
        self.assertIn("rank 1 (fsdp2_imbalance__rank1.pickle) peaks highest", out)
        self.assertNotIn(str(TRACES), out)
        code, out, _ = run("ranks", self.rank0)
        self.assertEqual(code, 0)
        self.assertNotIn("total", out)
        self.assertNotIn("against", out)

    def test_the_rank_with_twice_the_batch_is_explained_by_activations(self):
        names = ["fsdp2_imbalance__rank0.pickle", "fsdp2_imbalance__rank1.pickle"]
        report = run_json("ranks", *[TRACES / n for n in names])
        self.assertEqual(report["warnings"], [])
        [job] = report["jobs"]
        self.assertEqual(job["name"], "fsdp2_imbalance__rank*.pickle")
        self.check_totals(job)
        self.assertEqual(job["median_rank"], 0)
        self.assertEqual(job["median_meaning"], "the median rank: with 2 ranks, the other one")
        # Rank 1, and only rank 1, stands out: rank 0 is the median rank itself.
        self.assertEqual([r["distance"] for r in job["ranks"]][0], 0)
        self.assertGreater(job["ranks"][1]["distance"], 3.5)
        [e] = job["outliers"]
        self.assertEqual(job["explanation"], e, "the farthest outlier, under its old name")
        self.assertEqual((e["rank"], e["median_rank"]), (1, 0))
        self.assertEqual(e["measure"], "activation at peak")
        by_name = {c["category"]: c for c in e["categories"]}
        activation = by_name["activation"]
        self.assertGreater(activation["change"], 512 << 20)
        self.assertEqual(max(e["categories"], key=lambda c: c["change"])["category"], "activation")
        # The recording's own numbers: parameters, gradients and optimizer state are the same
        # on both ranks.
        truth = [json.loads((TRACES / n).with_suffix(".json").read_text())["truth"]
                 for n in names]
        for key in ["parameter_bytes", "gradient_bytes", "optimizer_state_bytes"]:
            self.assertEqual(truth[0][key], truth[1][key])
        for category in ["parameter", "gradient", "optimizer_state"]:
            self.assertTrue(by_name[category]["equal"], category)
        self.assertTrue(e["summary"].startswith("rank 1: activation +"), e["summary"])
        self.assertTrue(e["stacks"])
        grown = [s for s in e["stacks"] if s["category"] == "activation"]
        self.assertGreaterEqual(len(grown), 3)
        self.assertTrue(all(s["change"] > 0 and s["frames"] for s in grown))
        # Backward's blocks have no stack (autograd's thread runs no Python): set apart.
        self.assertEqual(e["unstacked"]["bytes_rank"], 532 << 20)
        self.assertEqual(round(e["unstacked"]["bytes_median"] / 2**20, 2), 361.37)
        # 2x the batch from the first step on: no two ranks did the same.
        self.assertEqual([g["ranks"] for g in job["sequences"]], ["0", "1"])
        self.assertEqual(job["departures"], [{"rank": 1, "by_step": True, "step": 0,
                                              "first_entry": 0}])
        code, out, _ = run("ranks", *[TRACES / n for n in names])
        self.assertIn("1 outlier (more than 3.5 robust deviations from the median): rank 1\n", out)
        self.assertIn("rank 1 against rank 0 (the median rank: with 2 ranks, the other one)", out)
        self.assertIn("\n" + e["summary"] + "\n", out)
        self.assertIn("no stack  (blocks without a recorded stack)", out)

    def test_identical_ranks_come_out_equal(self):
        paths = [TRACES / "fsdp2_gpu__rank0.pickle", TRACES / "fsdp2_gpu__rank1.pickle"]
        [job] = run_json("ranks", *paths)["jobs"]
        self.assertEqual(job["outliers"], [])
        self.assertEqual([r["distance"] for r in job["ranks"]], [0, 0])
        self.assertEqual([(g["ranks"], g["count"]) for g in job["sequences"]], [("0-1", 2)])
        self.assertEqual(job["departures"], [])
        _, out, _ = run("ranks", *paths)
        self.assertIn("every rank peaks at 2.18GiB reserved", out)
        self.assertIn("every rank did the same: one sequence of allocations", out)
        self.assertIn("no outlier: every rank stands within 3.5 robust deviations", out)

    def test_ddp_ranks_differ_by_the_gradient_bucket_alive_at_rank_0s_peak(self):
        """DDP's two ranks ran the same code, but rank 0's peak falls while DDP's 318 MiB
        gradient bucket (_ddp_init_helper) is alive and rank 1's does not: the ranks are told
        apart by that, and by where their sequences part, in step 1."""
        [job] = run_json("ranks", TRACES / "ddp__rank0.pickle", TRACES / "ddp__rank1.pickle")["jobs"]
        self.assertEqual(job["median_rank"], 1)
        [e] = job["outliers"]
        self.assertEqual(e["rank"], 0)
        self.assertEqual(e["summary"], "rank 0: gradient +318MiB; parameter, optimizer_state, "
                                       "activation, input, autograd_detail and workspace equal")
        [stack] = e["stacks"]
        self.assertEqual((stack["bytes_rank"] - stack["bytes_median"], stack["category"]),
                         (318 << 20, "gradient"))
        self.assertTrue(stack["frames"][0].startswith("_ddp_init_helper "), stack["frames"])
        self.assertEqual(job["departures"], [{"rank": 1, "by_step": True, "step": 1,
                                              "first_entry": 1192}])

    def test_two_jobs_are_never_merged(self):
        paths = [TRACES / n for n in ["ddp__rank0.pickle", "ddp__rank1.pickle",
                                      "fsdp2_gpu__rank0.pickle", "fsdp2_gpu__rank1.pickle"]]
        code, out, err = run("ranks", *paths)
        self.assertEqual(code, 0, err)
        self.assertEqual(err, "memtrail ranks: warning: fsdp2_gpu__rank0.pickle, "
                              "fsdp2_gpu__rank1.pickle are not ranks of the job of "
                              "ddp__rank0.pickle, ddp__rank1.pickle: named as another job "
                              "(fsdp2_gpu__rank*.pickle, not ddp__rank*.pickle); reported apart, "
                              "as job 2 (fsdp2_gpu__rank*.pickle)\n")
        self.assertIn("job 1 of 2: ddp__rank*.pickle, 2 ranks", out)
        self.assertIn("job 2 of 2: fsdp2_gpu__rank*.pickle, 2 ranks", out)
        report = run_json("ranks", *paths)
        self.assertEqual([[r["file"] for r in j["ranks"]] for j in report["jobs"]],
                         [[p.name for p in paths[:2]], [p.name for p in paths[2:]]])
        self.assertEqual([[r["rank"] for r in j["ranks"]] for j in report["jobs"]],
                         [[0, 1], [0, 1]])
        # Without names that tell them apart, their stacks do.
        with tempfile.TemporaryDirectory() as tmp:
            links = []
            for name, path in zip(["a.pickle", "b.pickle", "c.pickle", "d.pickle"],
                                  [paths[0], paths[2], paths[1], paths[3]]):
                links.append(pathlib.Path(tmp) / name)
                links[-1].symlink_to(path)
            report = run_json("ranks", *links)
            self.assertEqual([[r["file"] for r in j["ranks"]] for j in report["jobs"]],
                             [["a.pickle", "c.pickle"], ["b.pickle", "d.pickle"]])
            self.assertIn("other code", report["warnings"][0])

    def test_diff_compares_categories_at_each_peak_and_sets_unstacked_blocks_apart(self):
        a, b = TRACES / "fsdp2_imbalance__rank0.pickle", TRACES / "fsdp2_imbalance__rank1.pickle"
        report = run_json("diff", a, b, "--at", "peak")
        peaks = report["categories_at_peaks"]
        self.assertEqual(peaks["positions"],
                         [f["peaks"]["allocated"]["position"] for f in report["files"]])
        self.assertTrue(peaks["summaries"][0].startswith("activation +"), peaks["summaries"])
        # Backward's blocks have no stack (autograd's thread has no Python frames): 532 MiB on
        # rank 1, more than any one stack, yet not a line of the stack list.
        self.assertGreater(report["unstacked"]["bytes"][1], report["stacks"][0]["bytes"][1])
        self.assertTrue(all(s["frames"] for s in report["stacks"]))
        self.assertIn("Python frames only", report["unstacked"]["why"])
        self.assertEqual(report["stacks"][0]["frames"][0].split(" (")[0], "cross_entropy")
        code, out, _ = run("diff", a, b, "--at", "peak")
        self.assertNotIn("[no stack recorded]", out)
        self.assertIn("\n[1]: " + peaks["summaries"][0] + "\n", out)
        self.assertIn("and in blocks with no stack: 361.37MiB -> 532MiB", out)

    def test_a_bad_file_exits_2_naming_it(self):
        with tempfile.TemporaryDirectory() as tmp:
            bad = pathlib.Path(tmp) / "rank2.pickle"
            bad.write_text("not a snapshot")
            for path in [bad, pathlib.Path(tmp) / "rank3.pickle"]:
                code, out, err = run("ranks", self.rank0, path)
                self.assertEqual(code, 2, path)
                self.assertIn(str(path), err)
                self.assertEqual(out, "")
        self.assertEqual(run("ranks")[0], 2)


if __name__ == "__main__":
    unittest.main()
