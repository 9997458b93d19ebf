#!/usr/bin/env python3
"""Runs the `memtrail` binary the way a user would and checks what it prints against numbers
computed here independently: straight from the PyTorch anchors' pickles (and the
memory_stats() saved beside them), or by the reference allocator of make_test_snapshot.

Environment: MEMTRAIL (the binary), MAKE_TEST_SNAPSHOT (the generator), MEMTRAIL_SHARED_DIR.
`memtrail ranks` has its own file, test_ranks.py.
Run one group with `python3 test_cli.py Usage`.
"""
import collections
import json
import os
import pathlib
import pickle
import struct
import subprocess
import sys
import tempfile
import threading
import unittest

import perfetto_proto

MEMTRAIL = os.environ.get("MEMTRAIL", "memtrail")
MAKE_TEST_SNAPSHOT = os.environ.get("MAKE_TEST_SNAPSHOT", "make_test_snapshot")
ANCHORS = pathlib.Path(os.environ.get("MEMTRAIL_SHARED_DIR", "../shared")) / "anchors" / "pytorch"
COMMANDS = ["summary", "ranks", "segments", "top", "categories", "oom", "diff", "check", "export",
            "report", "replay", "whatif", "snapshot"]


def run(*args):
    result = subprocess.run([MEMTRAIL, *map(str, args)], capture_output=True, text=True)
    return result.returncode, result.stdout, result.stderr


def run_measured(*args, seconds=20):
    """Runs memtrail, killed after `seconds`; returns (exit code, stderr, peak RSS in KiB)."""
    with tempfile.TemporaryFile() as err:
        process = subprocess.Popen([MEMTRAIL, *map(str, args)], stdout=subprocess.DEVNULL,
                                   stderr=err)
        timer = threading.Timer(seconds, process.kill)
        timer.start()
        _, status, usage = os.wait4(process.pid, 0)
        timer.cancel()
        process.returncode = os.waitstatus_to_exitcode(status)
        err.seek(0)
        return process.returncode, err.read().decode(), usage.ru_maxrss


def zstd_bomb(entries):
    """A memtrail snapshot of one trace whose 'kind' column is `entries` zero bytes, in a zstd
    frame written by hand (RFC 8878): the zeros are RLE blocks of 128 KiB, 4 bytes each."""
    def text(t):
        return bytes([0xA0 | len(t)]) + t.encode()

    def block(kind, size, last):
        return (int(last) | kind << 1 | size << 3).to_bytes(3, "little")

    plain = (b"MEMTRAIL\x01\x81" + text("traces") + b"\x91\x81" + text("columns") + b"\x81" +
             text("kind") + b"\xdd" + struct.pack(">I", entries))
    frame = b"\x28\xb5\x2f\xfd\x00\x38" + block(0, len(plain), False) + plain
    for start in range(0, entries, 128 << 10):
        size = min(128 << 10, entries - start)
        frame += block(1, size, start + size == entries) + b"\x00"
    return frame


def run_json(*args):
    code, out, err = run(*args, "--json")
    if code != 0:
        raise AssertionError(f"memtrail {' '.join(map(str, args))} exited {code}: {err}")
    return json.loads(out)


def anchors():
    return sorted(ANCHORS.glob("*.pickle"))


def pickle_totals(path):
    """Totals over the pickle's final segment list."""
    with open(path, "rb") as f:
        data = pickle.load(f)
    t = collections.Counter()
    for seg in data["segments"]:
        t["reserved"] += seg["total_size"]
        t["segments"] += 1
        for block in seg["blocks"]:
            if block["state"] == "active_allocated":
                t["allocated"] += block["size"]
            elif block["state"] == "active_pending_free":
                t["pending_free"] += block["size"]
            else:
                t["free"] += block["size"]
                t["largest_free"] = max(t["largest_free"], block["size"])
    return data, t


def saved_stats(path):
    return json.loads(path.with_suffix(".json").read_text())["stats"]


class Usage(unittest.TestCase):
    def test_every_command_has_help(self):
        for command in COMMANDS:
            code, out, _ = run(command, "--help")
            self.assertEqual(code, 0, command)
            self.assertIn(f"usage: memtrail {command}", out)
            self.assertIn("--help", out)
        code, out, _ = run("--help")
        self.assertEqual(code, 0)
        for command in COMMANDS:
            self.assertIn(command, out)

    def test_bad_usage_exits_2_with_a_message(self):
        self.assertEqual(run()[0], 2)
        code, _, err = run("frobnicate")
        self.assertEqual(code, 2)
        self.assertIn("unknown command", err)
        code, _, err = run("summary", anchors()[0], "--frobnicate")
        self.assertEqual(code, 2)
        self.assertIn("--frobnicate", err)
        code, _, err = run("summary")
        self.assertEqual(code, 2)
        self.assertIn("missing", err)
        code, _, err = run("summary", anchors()[0], "--at", "999999999")
        self.assertEqual(code, 2)
        self.assertIn("past the trace", err)
        code, _, err = run("check", anchors()[0], "--max-peak-reserved", "lots")
        self.assertEqual(code, 2)
        self.assertIn("not a size", err)
        code, _, err = run("check", anchors()[0])
        self.assertEqual(code, 2)
        self.assertIn("at least one limit", err)
        code, _, err = run("export", anchors()[0], "--format", "svg", "-o", "x")
        self.assertEqual(code, 2)
        self.assertIn("unknown format", err)
        code, _, err = run("whatif", anchors()[0], "--alloc-conf", "bogus_key:1")
        self.assertEqual(code, 2)
        self.assertIn("bogus_key", err)

    def test_bad_files_exit_2_naming_the_file(self):
        with tempfile.TemporaryDirectory() as tmp:
            text = pathlib.Path(tmp) / "notes.txt"
            text.write_text("hello")
            truncated = pathlib.Path(tmp) / "cut.pickle"
            truncated.write_bytes(anchors()[0].read_bytes()[:200])
            for path in [text, truncated, pathlib.Path(tmp) / "missing.pickle"]:
                code, out, err = run("summary", path)
                self.assertEqual(code, 2, path)
                self.assertIn(str(path), err)
                self.assertEqual(out, "")


    def test_what_is_not_a_regular_file_is_refused_at_once(self):
        # A FIFO blocked in open() forever; /dev/zero grew to gigabytes, then std::bad_alloc.
        with tempfile.TemporaryDirectory() as tmp:
            fifo = pathlib.Path(tmp) / "rank0.pickle"
            os.mkfifo(fifo)
            zero = pathlib.Path(tmp) / "zero.memtrail"
            zero.symlink_to("/dev/zero")
            for path, what in [(fifo, "is a FIFO (named pipe)"), (zero, "is a character device")]:
                code, err, peak_kib = run_measured("summary", path)
                self.assertEqual(code, 2, err)
                self.assertIn(f"{path}: {what}, not a regular file", err)
                self.assertIn("snapshots are read only from regular files", err)
                self.assertLess(peak_kib, 200 * 1024)

    def test_a_decompression_bomb_is_refused_quickly_in_bounded_memory(self):
        # 1,900 bytes claiming 60M entries took 5.8 GB and 10 s or more.
        with tempfile.TemporaryDirectory() as tmp:
            bomb = pathlib.Path(tmp) / "bomb.memtrail.zst"
            bomb.write_bytes(zstd_bomb(60_000_000))
            self.assertLess(bomb.stat().st_size, 2000)
            code, err, peak_kib = run_measured("summary", bomb)
            self.assertEqual(code, 2, err)
            self.assertIn(str(bomb), err)
            self.assertIn("refused as a decompression bomb", err)
            self.assertLess(peak_kib, 200 * 1024)

    def test_a_pickle_repeating_a_long_string_is_refused_in_bounded_memory(self):
        # 300 KB of allocator_settings repeating one memo'd 30 KB string took over 3 GB: text was
        # charged per item, not per byte (issue 31). Text is now charged by the byte.
        with tempfile.TemporaryDirectory() as tmp:
            bomb = pathlib.Path(tmp) / "settings.pickle"
            text = "x" * 30_000
            settings = {"PYTORCH_CUDA_ALLOC_CONF": None, "repeated": [text] * 100_000}
            bomb.write_bytes(pickle.dumps({"segments": [], "allocator_settings": settings},
                                          protocol=4))
            self.assertLess(bomb.stat().st_size, 300_000)
            code, err, peak_kib = run_measured("summary", bomb)
            self.assertEqual(code, 2, err)
            self.assertIn(str(bomb), err)
            self.assertIn("repeats its text so often", err)
            self.assertIn("beyond the input's size plus 1 MiB", err)
            self.assertLess(peak_kib, 100 * 1024)

    def test_a_snapshot_rewritten_while_read_exits_0_or_2_never_a_signal(self):
        # The file was mapped: cut while read, it killed memtrail with SIGBUS (issue 31).
        with tempfile.TemporaryDirectory() as tmp:
            path = pathlib.Path(tmp) / "rewritten.pickle"
            entries = [{"action": "alloc", "addr": 4096 * i, "size": 512, "stream": 0}
                       for i in range(300_000)]
            content = pickle.dumps({"segments": [], "device_traces": [entries]}, protocol=4)
            path.write_bytes(content)
            done = threading.Event()

            def rewrite():
                while not done.is_set():
                    with open(path, "r+b") as f:
                        f.truncate(0)
                        for at in range(0, len(content), 1 << 16):
                            f.write(content[at:at + (1 << 16)])
            writer = threading.Thread(target=rewrite)
            writer.start()
            try:
                outcomes = [run("summary", path) for _ in range(20)]
            finally:
                done.set()
                writer.join()
            for code, _, err in outcomes:
                self.assertIn(code, (0, 2), err)
                if code == 2:
                    self.assertTrue(err.startswith(f"memtrail: {path}: "), err)


CATEGORIES = ["parameter", "optimizer_state", "gradient", "activation", "temporary", "input",
              "autograd_detail", "kv_cache", "workspace", "collective", "unknown"]


def transformer_parameter_bytes():
    """The fp32 parameters of shared/tools/torch_parity_traces.py's transformer, from its shapes."""
    d, ff, vocabulary = 1024, 4096, 32000
    layer = (3 * d * d + 3 * d) + (d * d + d) + (ff * d + ff) + (d * ff + d) + 4 * d
    return 4 * (vocabulary * d + 8 * layer + d * vocabulary + vocabulary)


class Categories(unittest.TestCase):
    def test_categories_add_up_to_the_allocated_bytes(self):
        for path in anchors():
            for at in ["end", "peak", "100"]:
                report = run_json("categories", path, "--at", at)
                self.assertEqual(sorted(report["categories"]), sorted(CATEGORIES))
                allocated = run_json("summary", path, "--at", at)["ranks"][0]["totals"]["allocated"]
                self.assertEqual(sum(report["categories"].values()), allocated, f"{path} {at}")
                self.assertEqual(report["allocated"], allocated)
                for name, bytes_ in report["categories"].items():
                    self.assertEqual(report["details"][name]["bytes"], bytes_)
                self.assertEqual(sum(r["bytes"] for r in report["rules"]), allocated)
                summary = run_json("summary", path, "--at", at)["ranks"][0]
                self.assertEqual(summary["categories"], report["categories"])

    def test_transformer_weights_and_adamw_state_match_the_model(self):
        path = ANCHORS / "transformer__default.pickle"
        with open(path, "rb") as f:
            data = pickle.load(f)
        # Adam's moments, read here from the frames PyTorch recorded: made under _init_group.
        init_group = sum(e["size"] for e in data["device_traces"][0] if e["action"] == "alloc"
                         and any(fr["name"] == "_init_group" for fr in e["frames"]))
        parameters = transformer_parameter_bytes()
        self.assertEqual(init_group, 2 * parameters)
        boundaries = run_json("categories", path)["steps"]["boundaries"]
        self.assertEqual(len(boundaries), 4)  # four Optimizer.step ranges
        for boundary in boundaries:
            details = run_json("categories", path, "--at", boundary - 1)["details"]
            self.assertEqual(details["parameter"]["requested"], parameters)
            self.assertEqual(details["optimizer_state"]["requested"], 2 * parameters)
            self.assertEqual(details["gradient"]["requested"], parameters)
            self.assertGreaterEqual(details["parameter"]["confidence"], 0.9)

    def test_text_report_and_the_one_line_in_summary_and_top(self):
        path = ANCHORS / "transformer__default.pickle"
        code, out, _ = run("categories", path, "--at", "peak")
        self.assertEqual(code, 0)
        self.assertIn("activation", out)
        self.assertIn("the evidence:", out)
        self.assertIn("made while the model was built, moved or loaded", out)
        for command in ["summary", "top"]:
            code, out, _ = run(command, path, "--at", "peak")
            self.assertEqual(code, 0)
            self.assertRegex(out, r"by meaning, at peak allocated \(entry \d+\): activation ")

    def test_bad_at_exits_2(self):
        code, out, err = run("categories", ANCHORS / "streams__default.pickle", "--at", "later")
        self.assertEqual(code, 2)
        self.assertIn("--at", err)
        self.assertEqual(out, "")


class Anchors(unittest.TestCase):
    def test_summary_totals_and_counters_match_the_pickle(self):
        for path in anchors():
            data, want = pickle_totals(path)
            report = run_json("summary", path)["ranks"][0]
            got = report["totals"]
            for key in ["reserved", "allocated", "pending_free", "free", "largest_free",
                        "segments"]:
                self.assertEqual(got[key], want[key], f"{path.name} {key}")
            self.assertEqual(report["entries"], len(data["device_traces"][0]))
            self.assertTrue(report["reconstruction"]["matches_final_segments"])
            stats = saved_stats(path)
            for name, value in stats.items():
                if name.startswith(("num_alloc_retries", "num_sync_all_streams")):
                    continue
                self.assertEqual(report["memory_stats"][name], value, f"{path.name} {name}")
            self.assertEqual(report["peaks"]["allocated"]["bytes"],
                             stats["allocated_bytes.all.peak"])
            self.assertEqual(report["peaks"]["reserved"]["bytes"],
                             stats["reserved_bytes.all.peak"])

    def test_summary_at_peak_holds_the_peak(self):
        for path in anchors():
            stats = saved_stats(path)
            report = run_json("summary", path, "--at", "peak")["ranks"][0]
            self.assertEqual(report["totals"]["allocated"], stats["allocated_bytes.all.peak"])
            entry = report["peaks"]["allocated"]["position"] - 1
            again = run_json("summary", path, "--at", entry)["ranks"][0]
            self.assertEqual(again["totals"], report["totals"])

    def test_several_ranks_name_the_highest(self):
        paths = anchors()
        report = run_json("summary", *paths)
        peaks = [saved_stats(p)["reserved_bytes.all.peak"] for p in paths]
        self.assertEqual(report["highest_peak"]["rank"], peaks.index(max(peaks)))
        code, out, _ = run("summary", *paths)
        self.assertEqual(code, 0)
        self.assertIn("peaks highest", out)
        self.assertIn("rank 1", out)

    def test_segments_match_the_pickle_segment_by_segment(self):
        for path in anchors():
            data, _ = pickle_totals(path)
            report = run_json("segments", path)
            got = report["segments"]
            want = sorted(data["segments"], key=lambda s: s["address"])
            self.assertEqual(len(got), len(want))
            for g, w in zip(got, want):
                self.assertEqual(g["address"], w["address"])
                self.assertEqual(g["size"], w["total_size"])
                self.assertEqual(g["blocks"], len(w["blocks"]))
                self.assertEqual(g["allocated"], w["allocated_size"])
                self.assertEqual(g["allocated"] + g["pending_free"], w["active_size"])
            code, out, _ = run("segments", path)
            self.assertEqual(code, 0)
            self.assertIn("total reserved", out)

    def test_top_stacks_add_up_to_the_allocated_bytes(self):
        for path in anchors():
            data, want = pickle_totals(path)
            report = run_json("top", path, "-n", "100000")["ranks"][0]
            self.assertEqual(sum(s["bytes"] for s in report["stacks"]), want["allocated"])
            self.assertEqual(report["live_bytes"], want["allocated"])
            # The largest stack, grouped here by frames from the pickle.
            by_stack = collections.Counter()
            for seg in data["segments"]:
                for block in seg["blocks"]:
                    if block["state"] == "active_allocated":
                        by_stack[tuple((f["name"], f["filename"], f["line"])
                                       for f in block.get("frames", []))] += block["size"]
            if by_stack:
                self.assertEqual(report["stacks"][0]["bytes"], by_stack.most_common(1)[0][1])
        code, out, _ = run("top", *anchors(), "-n", "3")
        self.assertEqual(code, 0)
        self.assertIn("peaks highest", out)

    def test_diff_of_a_file_with_itself_changes_nothing(self):
        path = anchors()[0]
        report = run_json("diff", path, path)
        self.assertEqual(report["stacks"], [])
        self.assertEqual(report["files"][0]["totals"], report["files"][1]["totals"])

    def test_diff_between_anchors_reports_the_difference(self):
        a, b = anchors()[:2]
        report = run_json("diff", a, b, "-n", "100000")
        _, ta = pickle_totals(a)
        _, tb = pickle_totals(b)
        self.assertEqual(report["files"][1]["totals"]["reserved"] -
                         report["files"][0]["totals"]["reserved"],
                         tb["reserved"] - ta["reserved"])
        # Blocks with no stack are set apart from the stacks.
        delta = sum(s["delta_from_base"][0] for s in report["stacks"])
        unstacked = report["unstacked"]["bytes"]
        self.assertEqual(delta + unstacked[1] - unstacked[0], tb["allocated"] - ta["allocated"])

    def test_oom_without_oom_says_so(self):
        code, out, _ = run("oom", anchors()[0])
        self.assertEqual(code, 0)
        self.assertIn("no OOM", out)
        self.assertEqual(run_json("oom", anchors()[0])["ooms"], [])


class Check(unittest.TestCase):
    def test_limits_pass_and_fail_with_exit_codes(self):
        path = ANCHORS / "transformer__default.pickle"
        peak = saved_stats(path)["reserved_bytes.all.peak"]
        self.assertEqual(run("check", path, "--max-peak-reserved", peak)[0], 0)
        for text in [f"{peak / 2**30 + 0.01:.2f}GiB", f"{(peak + 10**7) / 1e9:.2f}GB"]:
            self.assertEqual(run("check", path, "--max-peak-reserved", text)[0], 0, text)
        code, out, _ = run("check", path, "--max-peak-reserved", peak - 1)
        self.assertEqual(code, 1)
        self.assertIn("FAIL", out)
        self.assertIn("stacks holding the most memory", out)
        self.assertEqual(run("check", path, "--max-fragmentation", "1")[0], 0)
        code, out, _ = run("check", path, "--max-fragmentation", "0", "--json")
        self.assertEqual(code, 1)
        report = json.loads(out)
        self.assertFalse(report["passed"])
        self.assertTrue(report["files"][0]["checks"][0]["responsible"])
        self.assertEqual(run("check", path, "--no-oom")[0], 0)

    def test_depth_limits_the_frames_of_each_stack_as_in_top(self):
        path = ANCHORS / "transformer__default.pickle"
        code, out, err = run("check", path, "--max-peak-reserved", "1GiB", "-n", "1", "--depth", "2")
        self.assertEqual(code, 1, err)
        lines = out.split("in 99 blocks:\n", 1)[1].splitlines()
        # Two lines of the stack, then what is left of it.
        self.assertRegex(lines[2].strip(), r"^\.\.\. \d+ more frames$", out)
        self.assertNotIn("more frames", lines[0] + lines[1])


class Exports(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = pathlib.Path(self.tmp.name)

    def tearDown(self):
        self.tmp.cleanup()

    def test_folded_stacks_sum_to_the_live_bytes(self):
        for path in anchors():
            _, want = pickle_totals(path)
            out = self.dir / "end.folded"
            self.assertEqual(run("export", path, "--format", "folded", "-o", out)[0], 0)
            lines = out.read_text().splitlines()
            self.assertTrue(all(";" in l or "[no stack" in l or " " in l for l in lines))
            self.assertEqual(sum(int(l.rsplit(" ", 1)[1]) for l in lines), want["allocated"])
            run("export", path, "--format", "folded", "--at", "peak", "-o", out)
            total = sum(int(l.rsplit(" ", 1)[1]) for l in out.read_text().splitlines())
            self.assertEqual(total, saved_stats(path)["allocated_bytes.all.peak"])

    def test_perfetto_trace_parses_with_counters_and_slices(self):
        for path in anchors():
            data, want = pickle_totals(path)
            out = self.dir / "trace.perfetto-trace"
            self.assertEqual(run("export", path, "--format", "perfetto", "-o", out)[0], 0)
            trace = perfetto_proto.read_trace(out)
            allocated = [value for _, value in trace.counters["allocated"]]
            self.assertEqual(allocated[-1], want["allocated"])
            self.assertEqual(trace.counters["reserved"][-1][1], want["reserved"])
            self.assertEqual(max(allocated), saved_stats(path)["allocated_bytes.all.peak"])
            allocs = sum(1 for e in data["device_traces"][0] if e["action"] == "alloc")
            slices = [s for s in trace.slices if s["track"].startswith("allocations")]
            self.assertEqual(len(slices), allocs)
            self.assertTrue(all(s["end"] is not None and s["end"] >= s["begin"] for s in slices))

    def test_perfetto_interns_stacks_and_names_each_slices_category(self):
        # A DDP rank: its stacks repeat every step, and the categories are known (cli.JobCategories).
        path = JOB_TRACES / "ddp__rank0.pickle"
        out = self.dir / "ddp.perfetto-trace"
        self.assertEqual(run("export", path, "--format", "perfetto", "-o", out)[0], 0)
        trace = perfetto_proto.read_trace(out)  # every iid resolves, each defined once
        slices = [s for s in trace.slices if s["track"].startswith("allocations")]
        stacks = {s["args"]["stack"] for s in slices}
        self.assertEqual(len(trace.interned[(1, "strings")]), len(stacks))
        self.assertLess(len(stacks) * 5, len(slices))
        raw = out.read_bytes()
        longest = max(stacks, key=len).encode()
        self.assertEqual(raw.count(longest), 1)  # written once, however many slices it has
        # Each slice's category is the one `memtrail categories` gives its allocation.
        names = set(run_json("categories", path)["categories"])
        self.assertTrue(all(s["category"] in names for s in slices), names)
        self.assertGreaterEqual(len({s["category"] for s in slices} - {"unknown"}), 3)

    def test_csv_has_one_row_per_entry(self):
        path = anchors()[0]
        data, want = pickle_totals(path)
        out = self.dir / "trace.csv"
        self.assertEqual(run("export", path, "--format", "csv", "-o", out)[0], 0)
        import csv
        rows = list(csv.DictReader(out.open()))
        trace = data["device_traces"][0]
        self.assertEqual(len(rows), len(trace))
        self.assertEqual([r["action"] for r in rows], [e["action"] for e in trace])
        self.assertEqual(int(rows[-1]["reserved"]), want["reserved"])
        self.assertEqual(int(rows[-1]["allocated"]), want["allocated"])

    def test_torch_pickle_reads_back(self):
        for path in anchors():
            out = self.dir / "again.pickle"
            self.assertEqual(run("export", path, "--format", "torch-pickle", "-o", out)[0], 0)
            with open(out, "rb") as f:
                again = pickle.load(f)
            original, _ = pickle_totals(path)
            self.assertEqual(len(again["segments"]), len(original["segments"]))
            self.assertEqual(len(again["device_traces"][0]), len(original["device_traces"][0]))
            # Read back by memtrail's own reader: the same report.
            self.assertEqual(run_json("summary", out)["ranks"][0]["totals"],
                             run_json("summary", path)["ranks"][0]["totals"])


class MemtrailSnapshots(unittest.TestCase):
    """memtrail's own format, with numbers from the reference allocator."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        d = pathlib.Path(cls.tmp.name)
        cls.plain, cls.zstd = d / "random.mtrail", d / "random.mtrail.zst"
        cls.expected_path = d / "random.json"
        subprocess.run([MAKE_TEST_SNAPSHOT, "random", cls.plain, cls.expected_path], check=True)
        subprocess.run([MAKE_TEST_SNAPSHOT, "random", cls.zstd, d / "random2.json", "--zstd"],
                       check=True)
        cls.expected = json.loads(cls.expected_path.read_text())
        cls.oom, cls.oom_expected = d / "oom.mtrail", d / "oom.json"
        subprocess.run([MAKE_TEST_SNAPSHOT, "oom", cls.oom, cls.oom_expected], check=True)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_summary_at_end_at_entries_and_peaks(self):
        want = self.expected
        for path in [self.plain, self.zstd]:
            report = run_json("summary", path)["ranks"][0]
            self.assertEqual(report["kind"], "memtrail snapshot")
            self.assertEqual(report["entries"], want["entries"])
            for key, value in want["end"].items():
                self.assertEqual(report["totals"][key], value, key)
            self.assertEqual(report["peaks"]["allocated"]["bytes"], want["peak_allocated"])
            self.assertEqual(report["peaks"]["reserved"]["bytes"], want["peak_reserved"])
        for entry, at in want["at"].items():
            report = run_json("summary", self.plain, "--at", entry)["ranks"][0]
            for key, value in at["totals"].items():
                self.assertEqual(report["totals"][key], value, f"entry {entry} {key}")
        report = run_json("summary", self.plain, "--at", "peak")["ranks"][0]
        self.assertEqual(report["at"]["position"], want["peak_allocated_entry"] + 1)

    def test_categories_of_a_memtrail_snapshot_add_up(self):
        for at in ["end", "peak"]:
            report = run_json("categories", self.zstd, "--at", at)
            allocated = run_json("summary", self.zstd, "--at", at)["ranks"][0]["totals"]["allocated"]
            self.assertEqual(sum(report["categories"].values()), allocated)

    def test_segments_and_top(self):
        want = self.expected
        got = run_json("segments", self.plain)["segments"]
        self.assertEqual([[s["address"], s["size"], s["allocated"], s["pending_free"], s["free"],
                           s["largest_free"], s["blocks"]] for s in got], want["segments"])
        stacks = run_json("top", self.plain, "-n", "1000")["ranks"][0]["stacks"]
        by_function = collections.Counter()
        for s in stacks:
            inner = s["frames"][0].split(" (")[0] if s["frames"] else "[no stack recorded]"
            by_function[inner] += s["bytes"]
        self.assertEqual(dict(by_function), want["by_innermost_function"])

    def test_folded_export_sums_to_allocated(self):
        with tempfile.TemporaryDirectory() as tmp:
            out = pathlib.Path(tmp) / "x.folded"
            self.assertEqual(run("export", self.zstd, "--format", "folded", "-o", out)[0], 0)
            total = sum(int(l.rsplit(" ", 1)[1]) for l in out.read_text().splitlines())
            self.assertEqual(total, self.expected["end"]["allocated"])

    def test_oom_report(self):
        want = json.loads(self.oom_expected.read_text())
        report = run_json("oom", self.oom)["ooms"]
        self.assertEqual(len(report), 1)
        oom = report[0]
        self.assertEqual(oom["entry"], want["oom_entry"])
        self.assertEqual(oom["requested"], want["requested"])
        self.assertEqual(oom["device_free"], want["device_free"])
        self.assertEqual(oom["device_total"], want["device_total"])
        self.assertEqual(oom["verdict"], want["verdict"])
        self.assertEqual(oom["blockers"][0]["blocks"][0]["address"], want["blocker"])
        code, out, _ = run("oom", self.oom)
        self.assertEqual(code, 0)
        self.assertIn("verdict: fragmentation", out)
        self.assertEqual(run("check", self.oom, "--no-oom")[0], 1)


# The traces recorded on H200s (tests/data/traces/*.tar.gz), unpacked by the build beside bin/.
JOB_TRACES = pathlib.Path(MEMTRAIL).resolve().parent.parent / "tests" / "replay" / "traces"


def job_trace(test, name):
    path = JOB_TRACES / name
    if not path.exists():
        test.skipTest(f"{path} not unpacked (configure the build)")
    return path


class ReplayWhatif(unittest.TestCase):
    def test_replay_of_the_anchors_is_identical(self):
        for path in anchors():
            report = run_json("replay", path, "--expect-stats", path.with_suffix(".json"))
            self.assertTrue(report["parity"]["ok"], report["parity"]["first_difference"])
            self.assertEqual(report["peak_reserved"],
                             saved_stats(path)["reserved_bytes.all.peak"])

    def test_replay_writes_its_outputs(self):
        path = anchors()[0]
        with tempfile.TemporaryDirectory() as tmp:
            d = pathlib.Path(tmp)
            code, _, err = run("replay", path, "-o", d / "r.mtrail", "--torch-pickle",
                               d / "r.pickle", "--stats-json", d / "r.json")
            self.assertEqual(code, 0, err)
            stats = json.loads((d / "r.json").read_text())
            self.assertEqual(stats["allocated_bytes.all.peak"],
                             saved_stats(path)["allocated_bytes.all.peak"])
            self.assertEqual(run_json("summary", d / "r.mtrail")["ranks"][0]["totals"],
                             run_json("summary", path)["ranks"][0]["totals"])
            with open(d / "r.pickle", "rb") as f:
                self.assertIn("segments", pickle.load(f))

    def test_whatif_lists_every_policy(self):
        path = ANCHORS / "transformer__default.pickle"
        report = run_json("whatif", path, "--alloc-conf", "expandable_segments:True",
                          "--alloc-conf", "max_split_size_mb:64")
        names = [o["name"] for o in report["outcomes"]]
        self.assertEqual(len(names), 5)
        self.assertEqual(names[0], "as recorded")
        recorded = report["outcomes"][0]
        self.assertEqual(recorded["peak_reserved"], saved_stats(path)["reserved_bytes.all.peak"])
        self.assertEqual(recorded["device_allocations"], saved_stats(path)["num_device_alloc"])
        for outcome in report["outcomes"]:
            self.assertGreaterEqual(outcome["peak_reserved"], outcome["peak_allocated"])
            self.assertEqual(outcome["ooms"], 0)
        tight = run_json("whatif", path, "--alloc-conf", "expandable_segments:True",
                         "--device-memory", "1GiB")
        self.assertTrue(all(o["ooms"] > 0 for o in tight["outcomes"][1:]))

    def test_replay_takes_the_device_the_trace_was_recorded_on(self):
        path = job_trace(self, "ddp__rank1.pickle")  # rank 1's trace is device 1's
        report = run_json("replay", path, "--expect-stats", path.with_suffix(".json"))
        self.assertTrue(report["parity"]["ok"], report["parity"]["first_difference"])
        self.assertEqual(report["device"], 1)
        self.assertEqual(report["allocations"], saved_stats(path)["allocation.all.allocated"])
        meta = json.loads(path.with_suffix(".json").read_text())
        self.assertEqual(report["device_total"], meta["device_total"])
        self.assertEqual(report["device_total_source"], "expect-stats")
        self.assertEqual(report["num_alloc_retries"], meta["stats"]["num_alloc_retries"])
        alone = run_json("replay", path)
        self.assertEqual((alone["device_total"], alone["device_total_source"]),
                         (80 << 30, "default"))
        code, out, _ = run("replay", path, "--device-memory", "141GiB")
        self.assertEqual(code, 0)
        self.assertIn("device 1: replayed", out)
        self.assertIn("device size 141GiB (given by --device-memory)", out)
        code, _, err = run("replay", path, "--device", "0")
        self.assertEqual(code, 2)
        self.assertIn("has no trace or segments for device 0 (it has: 1)", err)

    def test_a_destroyed_mempool_gives_back_its_small_segment_first(self):
        path = job_trace(self, "mempool_release.pickle")
        report = run_json("replay", path, "--expect-stats", path.with_suffix(".json"))
        self.assertTrue(report["parity"]["ok"], report["parity"]["first_difference"])

    def test_whatif_reports_retries_and_the_device_size_it_assumed(self):
        path = job_trace(self, "oom_cap_fragmentation.pickle")
        meta = json.loads(path.with_suffix(".json").read_text())
        fraction = repr(meta["fraction"])
        report = run_json("whatif", path, "--alloc-conf", "", "--memory-fraction", fraction,
                          "--device-memory", meta["device_total"])
        self.assertEqual(report["device_total"], meta["device_total"])
        self.assertEqual(report["device_total_source"], "device-memory")
        self.assertEqual(report["capacity"], int(meta["device_total"] * meta["fraction"]))
        recorded, replayed = report["outcomes"][0], report["outcomes"][1]
        self.assertIsNone(recorded["num_alloc_retries"])  # a pickle has no memory_stats()
        self.assertEqual(replayed["num_alloc_retries"], meta["stats"]["num_alloc_retries"])
        self.assertEqual(replayed["num_ooms"], meta["stats"]["num_ooms"])
        self.assertTrue(all(o["num_alloc_retries"] is None for o in report["outcomes"][2:]))
        code, out, _ = run("whatif", path, "--alloc-conf", "", "--memory-fraction", fraction)
        self.assertEqual(code, 0)
        self.assertIn("device size 80GiB (assumed, not recorded in the snapshot: give "
                      "--device-memory)", out)
        self.assertIn("The recording itself reserved 2.81GiB, more than this capacity", out)
        self.assertIn("retries: num_alloc_retries of memory_stats()", out)
        self.assertEqual(run_json("whatif", path, "--alloc-conf", "")["device_total_source"],
                         "default")

    def test_whatif_takes_the_recorded_total_and_counters_of_a_memtrail_snapshot(self):
        path = job_trace(self, "oom_cap_fragmentation.pickle")
        meta = json.loads(path.with_suffix(".json").read_text())
        with tempfile.TemporaryDirectory() as tmp:
            replayed = pathlib.Path(tmp) / "r.mtrail"  # records the total and memory_stats()
            code, _, err = run("replay", path, "--expect-stats", path.with_suffix(".json"),
                               "-o", replayed)
            self.assertEqual(code, 0, err)
            report = run_json("whatif", replayed, "--alloc-conf", "expandable_segments:True")
        self.assertEqual(report["device_total_source"], "recorded")
        self.assertEqual(report["device_total"], meta["device_total"])
        self.assertEqual(report["outcomes"][0]["num_alloc_retries"],
                         meta["stats"]["num_alloc_retries"])
        self.assertEqual(report["outcomes"][0]["num_ooms"], meta["stats"]["num_ooms"])


class Frames(unittest.TestCase):
    """PyTorch's own frames (unwinder, caching allocator, dispatcher) and the interpreter's C
    frames are hidden by default in reports and exports, and shown with --all-frames."""

    USER = "forward (/work/model.py:12)"
    UNWIND = "torch::unwind::unwind() (unwind.cpp:40)"

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.path = pathlib.Path(cls.tmp.name) / "cpp_stacks.pickle"

        def native(name, filename, line=0):
            return {"name": name, "filename": filename, "line": line}

        user = {"name": "forward", "filename": "/work/model.py", "line": 12}
        # Innermost first, as PyTorch's symbolizer writes stacks="all" (a line of 2**64-1
        # included, as it writes for frames it has no line for).
        def stack(interpreter):
            return [native("torch::unwind::unwind()", "unwind.cpp", 40),
                    native("torch::CapturedTraceback::gather(bool, bool, bool)", "", 2**64 - 1),
                    native("c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::"
                           "malloc(signed char, unsigned long, CUstream_st*)", ""),
                    native("at::detail::empty_generic(...)", "EmptyTensor.cpp", 7),
                    native("c10::impl::wrap_kernel_functor_unboxed_<...>::call(...)",
                           "aten/src/ATen/core/boxing/impl/make_boxed_from_unboxed_functor.h"),
                    native(interpreter, "Python/ceval.c"),
                    user,
                    native("PyObject_Call", "Objects/call.c"),
                    native("__libc_start_main", ""),
                    native("_start", "")]
        trace = []
        for i, interpreter in enumerate(["_PyEval_EvalFrameDefault", "_PyEval_Vector"]):
            trace.append({"action": "alloc", "addr": 4096 + 512 * i, "size": 512, "stream": 0,
                          "time_us": 1000 + i, "frames": stack(interpreter)})
        blocks = [{"address": 4096 + 512 * i, "size": 512, "requested_size": 512,
                   "state": "active_allocated", "frames": trace[i]["frames"]} for i in range(2)]
        blocks.append({"address": 5120, "size": 1024, "requested_size": 0, "state": "inactive",
                       "frames": []})
        data = {"segments": [{"device": 0, "address": 4096, "total_size": 2048,
                              "allocated_size": 1024, "active_size": 1024,
                              "requested_size": 1024, "stream": 0, "segment_type": "small",
                              "blocks": blocks, "frames": []}],
                "device_traces": [trace]}
        with open(cls.path, "wb") as f:
            pickle.dump(data, f, protocol=5)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_top_shows_the_users_frame_and_groups_by_it(self):
        stacks = run_json("top", self.path)["ranks"][0]["stacks"]
        self.assertEqual(len(stacks), 1)  # two raw stacks, one once PyTorch's frames are gone
        self.assertEqual(stacks[0]["bytes"], 1024)
        self.assertEqual(stacks[0]["frames"][0], self.USER)
        code, out, _ = run("top", self.path, "--depth", "1")
        self.assertEqual(code, 0)
        self.assertIn(self.USER, out)
        self.assertNotIn("unwind", out)

        stacks = run_json("top", self.path, "--all-frames")["ranks"][0]["stacks"]
        self.assertEqual(len(stacks), 2)
        self.assertEqual(stacks[0]["frames"][0], self.UNWIND)
        self.assertEqual(len(stacks[0]["frames"]), 10)

    def test_csv_folded_and_perfetto_show_the_users_frame(self):
        import csv
        out = pathlib.Path(self.tmp.name)
        for args, want in [((), self.USER), (("--all-frames",), self.UNWIND)]:
            self.assertEqual(run("export", self.path, "--format", "csv", "-o", out / "t.csv",
                                 *args)[0], 0)
            rows = list(csv.DictReader((out / "t.csv").read_text().splitlines()))
            self.assertEqual([r["frame"] for r in rows], [want, want])

            self.assertEqual(run("export", self.path, "--format", "folded", "-o",
                                 out / "t.folded", *args)[0], 0)
            folded = (out / "t.folded").read_text().splitlines()
            self.assertTrue(all(line.rsplit(" ", 1)[0].endswith(want) for line in folded),
                            folded)

            self.assertEqual(run("export", self.path, "--format", "perfetto", "-o",
                                 out / "t.perfetto-trace", *args)[0], 0)
            slices = [s["name"] for s in perfetto_proto.read_trace(out / "t.perfetto-trace").slices]
            self.assertEqual(len(slices), 2)
            self.assertTrue(all(name.endswith(want) for name in slices), slices)
        self.assertEqual(len(folded), 2)  # with every frame, two stacks

    def test_a_torch_pickle_export_keeps_every_frame(self):
        out = pathlib.Path(self.tmp.name) / "again.pickle"
        self.assertEqual(run("export", self.path, "--format", "torch-pickle", "-o", out)[0], 0)
        with open(out, "rb") as f:
            again = pickle.load(f)
        self.assertEqual(len(again["device_traces"][0][0]["frames"]), 10)


def run_bytes(*args, stdin=None):
    """Runs memtrail with `stdin` (bytes) on its standard input; returns (code, stdout bytes,
    stderr text)."""
    result = subprocess.run([MEMTRAIL, *map(str, args)], input=stdin, capture_output=True)
    return result.returncode, result.stdout, result.stderr.decode()


def on_a_terminal(stream, *args):
    """Runs memtrail with `stream` ("stdin", "stdout" or "stderr") on a pseudo-terminal and the
    others on pipes (stdin empty); returns (exit code, what it wrote on the terminal, stderr when
    that is a pipe)."""
    import pty
    primary, secondary = pty.openpty()
    streams = {"stdin": subprocess.DEVNULL, "stdout": subprocess.DEVNULL,
               "stderr": subprocess.PIPE}
    streams[stream] = secondary
    process = subprocess.Popen([MEMTRAIL, *map(str, args)], **streams)
    os.close(secondary)
    seen = b""
    while stream != "stdin":
        try:
            chunk = os.read(primary, 4096)
        except OSError:  # EIO: the child closed the terminal
            break
        if not chunk:
            break
        seen += chunk
    err = ""
    if process.stderr:
        err = process.stderr.read().decode()
        process.stderr.close()
    process.wait()
    os.close(primary)
    return process.returncode, seen.decode(errors="replace"), err


class Conventions(unittest.TestCase):
    """Command-line conventions: '-' for standard input and output, progress only on a terminal,
    export ranges that refuse to write nothing, every error starting with 'memtrail:'."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = pathlib.Path(self.tmp.name)
        self.pickle = anchors()[0]

    def tearDown(self):
        self.tmp.cleanup()

    def test_every_error_starts_with_memtrail(self):
        missing = self.dir / "missing.pickle"
        text = self.dir / "notes.txt"
        text.write_text("hello")
        bad = [
            [], ["frobnicate"], ["summary"], ["summary", self.pickle, "--frobnicate"],
            ["summary", self.pickle, "--at"], ["summary", self.pickle, "--at", "nowhere"],
            ["summary", self.pickle, "--at", "999999999"], ["summary", missing],
            ["summary", text], ["summary", self.pickle, "--device", "7"],
            ["summary", self.pickle, "--json=yes"], ["segments", self.pickle, self.pickle],
            ["top", self.pickle, "-n", "many"], ["oom", self.pickle, "--entry", "0"],
            ["diff", self.pickle], ["check", self.pickle],
            ["check", self.pickle, "--max-peak-reserved", "lots"],
            ["export", self.pickle], ["export", self.pickle, "--format", "csv"],
            ["export", self.pickle, "--format", "svg", "-o", self.dir / "x"],
            ["export", self.pickle, "--format", "csv", "-o", self.dir / "no" / "such" / "dir"],
            ["export", self.pickle, "--format", "folded", "--from", "3", "-o", self.dir / "x"],
            ["export", self.pickle, "--format", "csv", "--to", "-1", "-o", self.dir / "x"],
            ["replay", self.pickle, "--alloc-conf", "bogus_key:1"],
            ["replay", self.pickle, "--memory-fraction", "2"],
            ["replay", self.pickle, "--expect-stats", missing],
            ["whatif", self.pickle], ["whatif", self.pickle, "--alloc-conf", "bogus_key:1"],
            ["ranks", self.pickle, missing], ["summary", "-", "-"],
        ]
        for args in bad:
            code, out, err = run_bytes(*args, stdin=b"")
            with self.subTest(args=" ".join(map(str, args))):
                self.assertNotEqual(code, 0)
                self.assertTrue(err.startswith("memtrail: "), err)
                self.assertEqual(err.count("\n"), 1 if args else err.count("\n"), err)
                self.assertEqual(out, b"")

    def test_a_snapshot_or_a_pickle_on_standard_input(self):
        code, snapshot, _ = run_bytes("replay", self.pickle, "-o", "-")
        self.assertEqual(code, 0)
        self.assertTrue(snapshot.startswith(b"MEMTRAIL"), snapshot[:16])
        for content in [self.pickle.read_bytes(), snapshot]:
            code, out, err = run_bytes("summary", "-", "--json", stdin=content)
            self.assertEqual(code, 0, err)
            report = json.loads(out)["ranks"][0]
            self.assertEqual(report["path"], "standard input")
            self.assertEqual(report["totals"], run_json("summary", self.pickle)["ranks"][0]["totals"])
        code, _, err = run_bytes("summary", "-", stdin=b"")
        self.assertEqual((code, err), (2, "memtrail: standard input: is empty (nothing came "
                                          "before its end)\n"))
        code, _, err = run_bytes("diff", "-", "-", stdin=self.pickle.read_bytes())
        self.assertEqual(code, 2)
        self.assertIn("only once", err)

    def test_no_snapshot_is_read_from_or_written_to_a_terminal(self):
        code, _, err = on_a_terminal("stdin", "summary", "-")
        self.assertEqual(code, 2)
        self.assertTrue(err.startswith("memtrail: summary: '-' reads a snapshot from standard "
                                       "input, which is a terminal"), err)
        for args in [["replay", self.pickle], ["export", self.pickle, "--format", "torch-pickle"],
                     ["export", self.pickle, "--format", "perfetto"]]:
            code, seen, err = on_a_terminal("stdout", *args, "-o", "-")
            self.assertEqual(code, 2)
            self.assertEqual(seen, "")
            self.assertIn("binary data to a terminal", err)
        code, seen, _ = on_a_terminal("stdout", "export", self.pickle, "--format", "csv", "-o", "-")
        self.assertEqual(code, 0)
        self.assertTrue(seen.startswith("index,time_ns,action"), seen[:40])

    def test_replay_to_standard_output_reports_on_standard_error(self):
        file = self.dir / "replayed.memtrail"
        self.assertEqual(run("replay", self.pickle, "-o", file)[0], 0)
        code, out, err = run_bytes("replay", "-", "-o", "-", stdin=self.pickle.read_bytes())
        self.assertEqual(code, 0, err)
        self.assertEqual(out, file.read_bytes())
        self.assertIn("parity with the original: identical", err)

    def test_export_to_standard_output_writes_what_a_file_gets(self):
        for format in ["torch-pickle", "folded", "perfetto", "csv"]:
            file = self.dir / ("out." + format)
            code, _, err = run_bytes("export", self.pickle, "--format", format, "-o", file)
            self.assertEqual(code, 0, err)
            self.assertEqual(err, f"memtrail export: wrote {file}\n")
            code, out, err = run_bytes("export", self.pickle, "--format", format, "-o", "-")
            self.assertEqual((code, err), (0, ""))
            self.assertEqual(out, file.read_bytes(), format)

    def test_export_ranges_include_both_ends_and_refuse_to_write_nothing(self):
        import csv
        whole = self.dir / "whole.csv"
        part = self.dir / "part.csv"
        self.assertEqual(run("export", self.pickle, "--format", "csv", "-o", whole)[0], 0)
        rows = list(csv.DictReader(whole.read_text().splitlines()))
        self.assertEqual(run("export", self.pickle, "--format", "csv", "--from", "10", "--to",
                             "19", "-o", part)[0], 0)
        self.assertEqual(list(csv.DictReader(part.read_text().splitlines())), rows[10:20])
        self.assertEqual(run("export", self.pickle, "--format", "csv", "--from", "peak", "-o",
                             part)[0], 0)
        peak = max(range(len(rows)), key=lambda i: (int(rows[i]["allocated"]), -i))
        self.assertEqual(list(csv.DictReader(part.read_text().splitlines())), rows[peak:])

        trace = perfetto_proto.read_trace(run_bytes("export", self.pickle, "--format", "perfetto",
                                                    "--from", "10", "--to", "19", "-o", "-")[1])
        counters = trace.counters["allocated"]
        self.assertEqual(counters[-1][1], int(rows[19]["allocated"]))
        self.assertLessEqual(len(counters), 11)

        empty = self.dir / "empty.csv"
        for args in [["--from", "20", "--to", "10"], ["--to", "start"]]:
            code, _, err = run("export", self.pickle, "--format", "csv", *args, "-o", empty)
            self.assertEqual(code, 2)
            self.assertTrue(err.startswith("memtrail: export: nothing to export"), err)
            self.assertIn("no file written", err)
            self.assertFalse(empty.exists())

    def test_progress_shows_on_a_terminal_and_nowhere_else(self):
        code, seen, _ = on_a_terminal("stderr", "whatif", self.pickle, "--alloc-conf",
                                      "expandable_segments:True")
        self.assertEqual(code, 0)
        self.assertIn(f"memtrail: loading {self.pickle}", seen)
        self.assertIn("replaying under 'expandable_segments:True' (1 of 1)", seen)
        self.assertTrue(seen.endswith("\r\x1b[K"), repr(seen[-40:]))  # erased when done
        code, _, err = run("whatif", self.pickle, "--alloc-conf", "expandable_segments:True")
        self.assertEqual((code, err), (0, ""))


if __name__ == "__main__":
    unittest.main()
