#!/usr/bin/env python3
"""`memtrail report` on bad input: a missing, foreign or truncated file gets the error every other
command gives for it; standard input and a missing -o are refused with what to do; a file whose
frame names carry HTML, script end tags and control characters makes a page that shows them as
text and runs nothing of theirs (checked in headless Chromium). Output paths: output_paths_test.py.

Environment: MEMTRAIL, TRACE_DIR, CHROMIUM (default chromium).
"""
import json
import os
import pathlib
import pickle
import re
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, str(pathlib.Path(__file__).parent))
import report_browser  # noqa: E402

MEMTRAIL = os.environ.get("MEMTRAIL", "memtrail")
TRACES = pathlib.Path(os.environ.get("TRACE_DIR", "build/tests/replay/traces"))
HOSTILE_NAME = ('</script><script>window.__memtrailHacked = 1</script>'
                '<img src=x onerror="window.__memtrailHacked = 2">\x1b[2J\r\x07')


def run(*args):
    return subprocess.run([MEMTRAIL, *map(str, args)], capture_output=True, text=True)


class BadInput(unittest.TestCase):
    def setUp(self):
        self.folder = tempfile.TemporaryDirectory()
        self.out = pathlib.Path(self.folder.name) / "report.html"

    def tearDown(self):
        self.folder.cleanup()

    def assert_same_error_as_summary(self, path):
        report = run("report", path, "-o", self.out)
        summary = run("summary", path)
        self.assertEqual(report.returncode, 2)
        self.assertEqual(summary.returncode, 2)
        self.assertTrue(report.stderr.startswith("memtrail: "), report.stderr)
        self.assertEqual(report.stderr, summary.stderr)
        self.assertFalse(self.out.exists())

    def test_a_missing_file(self):
        self.assert_same_error_as_summary(pathlib.Path(self.folder.name) / "missing.pickle")

    def test_a_file_that_is_no_snapshot(self):
        path = pathlib.Path(self.folder.name) / "notes.txt"
        path.write_text("these are not the bytes you are looking for\n" * 10)
        self.assert_same_error_as_summary(path)

    def test_a_truncated_pickle(self):
        data = (TRACES / "oom_cap_fragmentation.pickle").read_bytes()
        path = pathlib.Path(self.folder.name) / "cut.pickle"
        path.write_bytes(data[: len(data) // 2])
        self.assert_same_error_as_summary(path)

    def test_standard_input_is_refused_with_what_to_do(self):
        result = subprocess.run([MEMTRAIL, "report", "-", "-o", str(self.out)],
                                input=(TRACES / "oom_cap_fragmentation.pickle").read_bytes(),
                                capture_output=True)
        self.assertEqual(result.returncode, 2)
        self.assertIn(b"cannot read standard input; save the snapshot to a file first",
                      result.stderr)

    def test_the_output_is_required(self):
        result = run("report", TRACES / "oom_cap_fragmentation.pickle")
        self.assertEqual(result.returncode, 2)
        self.assertIn("memtrail: report: -o OUT.html is required", result.stderr)

    def test_dash_o_dash_writes_the_page_to_standard_output(self):
        result = run("report", TRACES / "oom_cap_fragmentation.pickle", "-o", "-")
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertTrue(result.stdout.startswith("<!DOCTYPE html>"))
        self.assertTrue(result.stdout.rstrip().endswith("</html>"))

    def test_no_remedies_skips_the_replays(self):
        result = run("report", TRACES / "oom_cap_fragmentation.pickle", "--no-remedies", "-o", "-")
        self.assertEqual(result.returncode, 0, result.stderr)
        data = json.loads(re.search(r'<script type="application/json" id="memtrail-data">'
                                    r"(.*?)</script>", result.stdout, re.S).group(1))
        oom = data["files"][0]["oom"]["ooms"][0]
        self.assertEqual(oom["verdict"], "fragmentation")
        self.assertNotIn("remedies", oom)
        self.assertNotIn("remedies,", data["files"][0]["oom_text"])

    def test_a_device_the_file_lacks(self):
        result = run("report", TRACES / "oom_cap_fragmentation.pickle", "--device", "3",
                     "-o", self.out)
        self.assertEqual(result.returncode, 2)
        self.assertIn("has no trace or segments for device 3", result.stderr)


class HostileFrameNames(unittest.TestCase):
    def test_names_are_shown_as_text_and_nothing_of_theirs_runs(self):
        with open(TRACES / "oom_cap_fragmentation.pickle", "rb") as f:
            snapshot = pickle.load(f)
        for entry in snapshot["device_traces"][0]:
            if entry["action"] == "alloc" and entry["frames"]:
                entry["frames"][0]["name"] = HOSTILE_NAME
        with tempfile.TemporaryDirectory() as folder:
            path = pathlib.Path(folder) / "hostile.pickle"
            path.write_bytes(pickle.dumps(snapshot, protocol=4))
            page = pathlib.Path(folder) / "report.html"
            result = run("report", path, "-o", page)
            self.assertEqual(result.returncode, 0, result.stderr)
            self.assertNotIn("</script><script>window", page.read_text())
            with report_browser.Browser() as browser:
                browser.open_report(page)
                self.assertIsNone(browser.evaluate("window.__memtrailHacked ?? null"))
                self.assertEqual(browser.evaluate("document.scripts.length"), 3)
                frames = browser.evaluate('[...document.querySelectorAll("table.top li")]'
                                          ".map(li => li.textContent)")
                self.assertTrue(any(f.startswith("</script><script>window.__memtrailHacked")
                                    for f in frames), frames)
                self.assertEqual(browser.errors, [])


class FilesWithNothingToDraw(unittest.TestCase):
    """A snapshot without a trace (segments only) and one without anything still make a page
    that draws, with no error."""

    def test_pages_of_empty_files_draw(self):
        with open(TRACES / "oom_cap_fragmentation.pickle", "rb") as f:
            snapshot = pickle.load(f)
        snapshot["device_traces"] = [[] for _ in snapshot["device_traces"]]
        with tempfile.TemporaryDirectory() as folder, report_browser.Browser() as browser:
            for name in ("segments_only", "empty"):
                with self.subTest(file=name):
                    if name == "empty":
                        snapshot["segments"] = []
                    path = pathlib.Path(folder) / f"{name}.pickle"
                    path.write_bytes(pickle.dumps(snapshot, protocol=4))
                    page = pathlib.Path(folder) / f"{name}.html"
                    result = run("report", path, "-o", page)
                    self.assertEqual(result.returncode, 0, result.stderr)
                    browser.open_report(page)
                    self.assertEqual(browser.errors, [])
                    self.assertIn("trace entries\t0", browser.evaluate("document.body.innerText"))


if __name__ == "__main__":
    unittest.main()
