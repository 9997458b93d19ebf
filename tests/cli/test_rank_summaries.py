#!/usr/bin/env python3
"""`memtrail summarize` and `memtrail ranks` at scale, run the way a user would: a summary's
numbers are the ones `categories`, `top`, `summary` and `oom` give for the same file; its
identity comes from the snapshot's job identity or the file's name; its stack and sequence
hashes are stable; `ranks` takes folders of snapshots and summaries, names the one rank of 200
that differs and why, and reports two jobs in one folder as two jobs.

Environment: as test_ranks.py, and MAKE_RANK_FILES (tests/cli/make_rank_files.cpp).
"""
import json
import os
import pathlib
import re
import subprocess
import tempfile
import time
import unittest

from test_cli import run, run_json, run_measured

TRACES = pathlib.Path(os.environ.get("MEMTRAIL_UNPACKED_TRACES", "build/tests/replay/traces"))
MAKE_RANK_FILES = os.environ.get("MAKE_RANK_FILES", "make_rank_files")
IMBALANCE = [TRACES / f"fsdp2_imbalance__rank{r}.pickle" for r in (0, 1)]


def summarize(path, folder):
    code, out, err = run("summarize", "-o", folder, path)
    if code != 0:
        raise AssertionError(f"summarize {path}: {err}")
    written = pathlib.Path(out.strip())
    return json.loads(written.read_text()), written


def fnv1a(text):
    h = 0xcbf29ce484222325
    for byte in text.encode():
        h = ((h ^ byte) * 0x100000001b3) % 2**64
    return h


def stack_hash(frames):
    """The hash the docs define: FNV-1a of the folded frames' labels, outermost first, one a
    line, the lengths of folded runs left out."""
    lines = [re.sub(r"^\.\.\. \d+( to \d+)? frames? of ", "... frames of ", f) for f in frames]
    return f"{fnv1a(''.join(line + chr(10) for line in reversed(lines))):016x}"


def make_rank_files(folder, count, different, fmt="memtrail", job="job-1"):
    subprocess.run([MAKE_RANK_FILES, IMBALANCE[0], IMBALANCE[1], str(different), str(count),
                    folder, fmt, job], check=True)


class Summaries(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.folder = pathlib.Path(cls.tmp.name)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_numbers_equal_categories_top_and_summary(self):
        path = IMBALANCE[1]
        s, written = summarize(path, self.folder)
        self.assertEqual(written, self.folder / (path.name + ".summary.json"))
        self.assertEqual((s["format"], s["version"]), ("memtrail rank summary", 1))
        self.assertEqual(s["categories_at_peak"],
                         run_json("categories", path, "--at", "peak")["categories"])
        whole = run_json("summary", path)["ranks"][0]
        for curve in ["allocated", "reserved"]:
            self.assertEqual(s["peak_" + curve]["bytes"], whole["peaks"][curve]["bytes"])
            self.assertEqual(s["peak_" + curve]["position"], whole["peaks"][curve]["position"])
        self.assertEqual((s["end_allocated"], s["end_reserved"]),
                         (whole["totals"]["allocated"], whole["totals"]["reserved"]))
        at_reserved = run_json("summary", path, "--at", "peak-reserved")["ranks"][0]["totals"]
        self.assertEqual(s["fragmentation_at_peak_reserved"],
                         {k: at_reserved[k] for k in ["free", "largest_free", "fragmentation"]})
        # `top` at the peak, stack by stack; its stack without frames is set apart here.
        top = run_json("top", path, "--at", "peak", "-n", "100")["ranks"][0]["stacks"]
        stacked = [t for t in top if t["frames"]]
        self.assertEqual([(t["bytes"], t["blocks"], t["frames"]) for t in stacked[:20]],
                         [(t["bytes"], t["blocks"], t["frames"]) for t in s["top_stacks"]])
        self.assertEqual(s["unstacked_at_peak"], sum(t["bytes"] for t in top if not t["frames"]))
        for t in s["top_stacks"]:
            self.assertEqual(t["hash"], stack_hash(t["frames"]))
        # The curve: 200 points, its highest the peaks.
        self.assertEqual(len(s["curve"]["positions"]), 200)
        self.assertEqual(max(s["curve"]["allocated"]), s["peak_allocated"]["bytes"])
        self.assertEqual(max(s["curve"]["reserved"]), s["peak_reserved"]["bytes"])
        # FSDP2's steps come from its annotations; the peak is in step 1.
        self.assertEqual((s["step_source"], s["steps"], s["peak_allocated"]["step"]),
                         ("annotations", 5, 1))
        self.assertLess(written.stat().st_size, 32 << 10)

    def test_identity_from_the_name_and_from_the_snapshots_job(self):
        s, _ = summarize(IMBALANCE[1], self.folder)
        self.assertEqual((s["identity"]["rank"], s["identity"]["source"], s["identity"]["job_id"]),
                         (1, "file name", ""))
        jobs = self.folder / "identity"
        make_rank_files(jobs, 4, 2, "memtrail", "slurm-4242")
        s, _ = summarize(jobs / "rank3.memtrail", self.folder)
        identity = s["identity"]
        self.assertEqual({k: identity[k] for k in
                          ["job_id", "rank", "local_rank", "world_size", "source", "host"]},
                         {"job_id": "slurm-4242", "rank": 3, "local_rank": 3, "world_size": 4,
                          "source": "snapshot", "host": "node-0"})

    def test_ooms_have_their_verdict_and_categories(self):
        path = TRACES / "oom_fragmentation__default.pickle"
        s, _ = summarize(path, self.folder)
        reports = run_json("oom", path)
        reports = reports.get("ooms", [reports])
        self.assertEqual(len(s["ooms"]), s["oom_count"])
        self.assertGreater(len(s["ooms"]), 0)
        for oom, report in zip(s["ooms"], reports):
            self.assertEqual(oom["entry"], report["entry"])
            self.assertEqual(oom["verdict"].split(" ")[0], report["verdict"])
            self.assertEqual(oom["categories"],
                             run_json("categories", path, "--at", oom["entry"])["categories"])

    def test_hashes_are_stable_across_ranks_and_addresses(self):
        a, _ = summarize(TRACES / "fsdp2_gpu__rank0.pickle", self.folder)
        b, _ = summarize(TRACES / "fsdp2_gpu__rank1.pickle", self.folder)
        # Two processes on two GPUs: other addresses and times, the same allocations.
        self.assertEqual(a["sequence_hash"], b["sequence_hash"])
        self.assertEqual(a["sequence"], b["sequence"])
        self.assertEqual([t["hash"] for t in a["top_stacks"]], [t["hash"] for t in b["top_stacks"]])
        c, _ = summarize(IMBALANCE[1], self.folder)
        self.assertNotEqual(a["sequence_hash"], c["sequence_hash"])

    def test_one_pass_costs_no_more_memory_than_one_model(self):
        """The largest trace here (38 MB, 154k entries): summarize holds the snapshot and one
        model, as `categories` does, not the two models `ranks` used to build."""
        path = TRACES / "generate_dynamic__stacks-all.pickle"
        code, err, summarize_kib = run_measured("summarize", "-o", self.folder, path, seconds=60)
        self.assertEqual(code, 0, err)
        code, err, categories_kib = run_measured("categories", path, seconds=60)
        self.assertEqual(code, 0, err)
        print(f"\npeak RSS: summarize {summarize_kib} KiB, categories {categories_kib} KiB")
        self.assertLess(summarize_kib, categories_kib * 1.15)
        s = json.loads((self.folder / (path.name + ".summary.json")).read_text())
        self.assertEqual(s["entries"], 153980)
        self.assertLessEqual(len(s["sequence"]), 256)

    def test_all_frames_keeps_every_frame_and_is_never_mixed_with_folded(self):
        folder = self.folder / "frames"
        folder.mkdir()
        path = folder / "rank1.pickle"
        path.symlink_to(IMBALANCE[1])
        code, _, err = run("summarize", "--all-frames", path)
        self.assertEqual(code, 0, err)
        every = json.loads((folder / "rank1.pickle.summary.json").read_text())
        folded, _ = summarize(IMBALANCE[1], self.folder)
        self.assertEqual((every["stack_frames"], folded["stack_frames"]), ("all", "folded"))
        self.assertGreater(len(every["top_stacks"][0]["frames"]),
                           len(folded["top_stacks"][0]["frames"]))
        self.assertFalse(any(f.startswith("... ") for t in every["top_stacks"] for f in t["frames"]))
        self.assertEqual(every["categories_at_peak"], folded["categories_at_peak"])
        top = run_json("top", path, "--at", "peak", "--all-frames", "-n", "3")["ranks"][0]["stacks"]
        self.assertIn(top[1]["frames"], [t["frames"] for t in every["top_stacks"]])
        # `ranks` uses the summary beside only when it has the frames asked: a planted one shows.
        every["peak_reserved"]["bytes"] = 1 << 40
        (folder / "rank1.pickle.summary.json").write_text(json.dumps(every))
        [job] = run_json("ranks", "--all-frames", path)["jobs"]
        self.assertEqual(job["ranks"][0]["peak_reserved"]["bytes"], 1 << 40)
        [job] = run_json("ranks", path)["jobs"]
        self.assertEqual(job["ranks"][0]["peak_reserved"]["bytes"], folded["peak_reserved"]["bytes"])

    def test_bad_summaries_exit_2_naming_file_and_key(self):
        s, written = summarize(IMBALANCE[0], self.folder)
        bad = self.folder / "bad" / "rank5.pickle.summary.json"
        bad.parent.mkdir()
        del s["peak_reserved"]
        bad.write_text(json.dumps(s))
        code, out, err = run("ranks", bad)
        self.assertEqual((code, out), (2, ""))
        self.assertIn(f"{bad}: not a rank summary (docs/ranks.md): the summary: the key 'peak_reserved' is "
                      "missing", err)
        s["peak_reserved"] = {}
        s["version"] = 7
        bad.write_text(json.dumps(s))
        code, _, err = run("ranks", bad)
        self.assertIn("version 7: this memtrail reads rank summaries of version 1 to 1", err)
        bad.write_text("{\"format\": ")
        self.assertIn("at byte 11: expected a value, found the end", run("ranks", bad)[2])
        code, _, err = run("ranks", self.folder / "nothing-here")
        self.assertEqual(code, 2)
        self.assertIn("nothing-here: no such file or folder", err)


class RanksAtScale(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.root = pathlib.Path(cls.tmp.name)
        make_rank_files(cls.root / "job", 200, 137)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_the_one_rank_of_200_that_differs_is_named_and_explained(self):
        started = time.monotonic()
        code, out, err = run("ranks", self.root / "job")
        seconds = time.monotonic() - started
        self.assertEqual((code, err), (0, ""))
        print(f"\n200 snapshots ranked in {seconds:.2f} s")
        self.assertIn("ranks 0-136 and 138-199 did the same; rank 137 differs from step 0", out)
        self.assertIn("1 outlier (more than 3.5 robust deviations from the median): rank 137\n",
                      out)
        self.assertIn("rank 137: activation +852.88MiB, autograd_detail +170.63MiB", out)
        self.assertIn("... 180 more ranks, each within 0.0 of the median", out)
        [job] = run_json("ranks", self.root / "job")["jobs"]
        self.assertEqual((job["name"], job["job_id"]), ("job-1", "job-1"))
        self.assertEqual([r["rank"] for r in job["ranks"]], list(range(200)))
        self.assertEqual([e["rank"] for e in job["outliers"]], [137])
        self.assertEqual(job["ranks"][0]["identity_source"], "snapshot")

    def test_summaries_give_the_same_report_as_snapshots(self):
        folder = self.root / "summaries"
        code, _, err = run("summarize", "-o", folder, self.root / "job")
        self.assertEqual(code, 0, err)
        self.assertEqual(len(list(folder.glob("*.summary.json"))), 200)
        # Summaries keep the paths they were made from, so the reports are the same, byte for
        # byte.
        self.assertEqual(run("ranks", folder), run("ranks", self.root / "job"))
        self.assertEqual(run("ranks", folder, "--json"), run("ranks", self.root / "job", "--json"))

    def test_summaries_beside_snapshots_are_used_and_refreshed(self):
        folder = self.root / "beside"
        make_rank_files(folder, 4, 3)
        code, out, _ = run("summarize", folder)
        self.assertEqual(out.split(), [str(folder / f"rank{r}.memtrail.summary.json")
                                       for r in (0, 1, 2, 3)])
        first = run("ranks", folder)
        # A summary beside its snapshot stands for it: a planted one is what ranks reports...
        planted = json.loads((folder / "rank1.memtrail.summary.json").read_text())
        planted["peak_reserved"]["bytes"] = 1 << 40
        (folder / "rank1.memtrail.summary.json").write_text(json.dumps(planted))
        self.assertIn("rank 1 (rank1.memtrail) peaks highest: 1TiB reserved", run("ranks", folder)[1])
        # ... until the snapshot is newer.
        os.utime(folder / "rank1.memtrail", (time.time() + 5, time.time() + 5))
        self.assertEqual(run("ranks", folder), first)

    def test_two_jobs_in_one_folder_are_two_jobs(self):
        folder = self.root / "two"
        make_rank_files(folder / "a", 6, 4, "memtrail", "job-a")
        make_rank_files(folder / "b", 3, 9, "pickle")
        code, out, err = run("ranks", folder)
        self.assertEqual(code, 0)
        self.assertIn("job 1 of 2: job-a, 6 ranks", out)
        self.assertIn("job 2 of 2: rank*.pickle, 3 ranks", out)
        self.assertIn("are not ranks of the job of rank0.memtrail, rank1.memtrail, rank2.memtrail, "
                      "rank3.memtrail and 2 more: its snapshot names no job id, the first job's do",
                      err)
        report = run_json("ranks", folder)
        self.assertEqual([[r["rank"] for r in j["ranks"]] for j in report["jobs"]],
                         [[0, 1, 2, 3, 4, 5], [0, 1, 2]])
        self.assertEqual([r["identity_source"] for r in report["jobs"][1]["ranks"]],
                         ["file name"] * 3)
        self.assertEqual([e["rank"] for e in report["jobs"][0]["outliers"]], [4])
        self.assertEqual(report["jobs"][1]["outliers"], [])


if __name__ == "__main__":
    unittest.main()
