#!/usr/bin/env python3
"""`memtrail report` pages made from real PyTorch 2.11 traces (tests/data/traces/*.tar.gz,
unpacked in TRACE_DIR), opened in headless Chromium (report_browser.py): the DOM must show the
numbers `memtrail summary/oom/categories/top/ranks --json` print for the same file, the OOM's
verdict and remedies as `memtrail oom` words them, and no console error. Screenshots are kept in
REPORT_SCREENSHOTS (the build folder).

Environment: MEMTRAIL, TRACE_DIR, REPORT_SCREENSHOTS, CHROMIUM (default chromium).
"""
import json
import os
import pathlib
import re
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, str(pathlib.Path(__file__).parent))
import report_browser  # noqa: E402

MEMTRAIL = os.environ.get("MEMTRAIL", "memtrail")
TRACES = pathlib.Path(os.environ.get("TRACE_DIR", "build/tests/replay/traces"))
SCREENSHOTS = pathlib.Path(os.environ.get("REPORT_SCREENSHOTS", tempfile.gettempdir()))


def run(*args):
    result = subprocess.run([MEMTRAIL, *map(str, args)], capture_output=True, text=True)
    if result.returncode != 0:
        raise AssertionError(f"memtrail {' '.join(map(str, args))} exited "
                             f"{result.returncode}: {result.stderr}")
    return result.stdout


def cli_json(*args):
    return json.loads(run(*args, "--json"))


def trace(name):
    return TRACES / f"{name}.pickle"


class ReportPage:
    """A page made once per class from `names`, opened in one browser for all its tests; mixed
    into a unittest.TestCase per set of files."""
    names = ()

    @classmethod
    def setUpClass(cls):
        cls.folder = tempfile.TemporaryDirectory()
        cls.page = pathlib.Path(cls.folder.name) / "report.html"
        run("report", *map(trace, cls.names), "-o", cls.page)
        cls.browser = report_browser.Browser().__enter__()
        cls.drawn_ms = cls.browser.open_report(cls.page)
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        cls.browser.screenshot(SCREENSHOTS / f"report_{'+'.join(cls.names)}.png")

    @classmethod
    def tearDownClass(cls):
        cls.browser.__exit__(None, None, None)
        cls.folder.cleanup()

    def dom(self, expression):
        return self.browser.evaluate(expression)

    def bytes_in(self, selector):
        """The data-bytes of every element `selector` matches, as integers."""
        return self.dom(f"[...document.querySelectorAll({json.dumps(selector)})]"
                        ".map(e => Number(e.dataset.bytes))")

    def test_no_console_error_and_drawn(self):
        self.assertEqual(self.browser.errors, [])
        self.assertGreater(self.drawn_ms, 0)

    def test_no_placeholder_words_in_the_text(self):
        text = self.dom("document.body.innerText")
        # A value the page failed to format ("entry 12null") ends at a word boundary.
        self.assertNotRegex(text, r"(null|undefined|NaN|Infinity)\b|\[object ")

    def test_the_facts_are_summary_at_the_peak(self):
        for index, name in enumerate(self.names):
            summary = cli_json("summary", trace(name), "--at", "peak")["ranks"][0]
            section = f"#file-{index} .totals"
            for key in ("reserved", "allocated", "pending free", "free in segments",
                        "requested", "rounding waste"):
                field = {"pending free": "pending_free", "free in segments": "free",
                         "rounding waste": "rounding_waste"}.get(key, key)
                with self.subTest(name=name, key=key):
                    self.assertEqual(self.bytes_in(f'{section} tr[data-key="{key}"] td[data-bytes]'),
                                     [summary["totals"][field]])
            for curve in ("allocated", "active", "reserved"):
                with self.subTest(name=name, peak=curve):
                    self.assertEqual(self.bytes_in(f'{section} tr[data-key="peak {curve}"] td[data-bytes]'),
                                     [summary["peaks"][curve]["bytes"]])
            heading = self.dom(f'document.querySelector("#file-{index} .totals-heading")'
                               ".textContent")
            self.assertEqual(heading, "At the " + summary["at"]["label"])

    def test_the_top_stacks_are_memtrail_tops(self):
        for index, name in enumerate(self.names):
            top = cli_json("top", trace(name), "--at", "peak", "-n", "20")["ranks"][0]
            shown = self.dom(f'[...document.querySelectorAll("#file-{index} table.top tr.stack")]'
                             '.map(r => [Number(r.cells[1].dataset.bytes), '
                             '[...r.querySelectorAll("li")].map(li => li.textContent)])')
            self.assertEqual(shown, [[s["bytes"], s["frames"]] for s in top["stacks"]])

    def test_the_categories_are_memtrail_categories(self):
        for index, name in enumerate(self.names):
            categories = cli_json("categories", trace(name), "--at", "peak")
            shown = self.dom(f'Object.fromEntries([...document.querySelectorAll('
                             f'"#file-{index} table.categories tr[data-category]")]'
                             '.map(r => [r.dataset.category, Number(r.cells[1].dataset.bytes)]))')
            expected = {k: v for k, v in categories["categories"].items() if v > 0}
            expected["all"] = categories["allocated"]
            self.assertEqual(shown, expected)

    def test_the_pictures_keep_the_clis_numbers(self):
        data = self.dom('JSON.parse(document.getElementById("memtrail-data").textContent)')
        for name, file in zip(self.names, data["files"]):
            summary = cli_json("summary", trace(name), "--at", "peak")["ranks"][0]
            timeline = file["timeline"]
            # Min-max columns keep the highest and lowest moment of every column.
            self.assertEqual(max(timeline["allocated"]["max"]), summary["peaks"]["allocated"]["bytes"])
            self.assertEqual(max(timeline["reserved"]["max"]), summary["peaks"]["reserved"]["bytes"])
            self.assertLessEqual(len(timeline["x"]), 2048)
            stacked = [sum(layer["bytes"][c] for layer in timeline["layers"])
                       for c in range(len(timeline["x"]))]
            self.assertEqual(max(stacked), summary["peaks"]["allocated"]["bytes"])
            segments = file["segment_map"]["segments"]
            self.assertEqual(sum(s["size"] for s in segments), summary["totals"]["reserved"])
            self.assertEqual(sum(b[1] for s in segments for b in s["blocks"] if b[2] == 0),
                             summary["totals"]["allocated"])
            self.assertEqual(file["flame"]["total"], summary["totals"]["allocated"])


class OomCapFragmentation(ReportPage, unittest.TestCase):
    names = ("oom_cap_fragmentation",)

    def test_the_verdict_and_remedies_are_memtrail_ooms(self):
        oom = cli_json("oom", trace(self.names[0]))["ooms"][0]
        self.assertEqual(self.dom('document.querySelector(".oom .verdict-text").textContent'),
                         oom["verdict_text"])
        self.assertEqual(self.dom('document.querySelector(".oom .explanation").textContent'),
                         oom["explanation"])
        # The text memtrail oom prints, its wrapped lines joined.
        printed = " ".join(run("oom", trace(self.names[0])).split())
        remedies = self.dom('[...document.querySelectorAll(".oom .remedy")]'
                            '.map(e => [e.textContent, e.dataset.avoids])')
        self.assertEqual(len(remedies), len(oom["remedies"]["tried"]))
        for (text, avoids), tried in zip(remedies, oom["remedies"]["tried"]):
            self.assertIn(text, printed)
            self.assertEqual(avoids, str(tried["avoids"]).lower())
        self.assertIn("with no memory cap this OOM does not happen", printed)
        # The heading and what to do when no setting avoids it, as memtrail oom prints them.
        heading = " ".join(self.dom('document.querySelector(".oom .remedies-heading").textContent')
                           .split())
        self.assertIn(heading, printed)
        conclusion = self.dom('document.querySelector(".oom .remedies-conclusion").textContent')
        self.assertTrue(conclusion.startswith("no allocator setting avoids it under the cap"))
        self.assertIn(conclusion, printed)
        # The blockers and holders: memtrail oom's text, shown open (its replays left out: the
        # remedies above are theirs).
        self.assertTrue(self.dom('document.querySelector(".oom-text").open'))
        self.assertEqual(self.dom('document.querySelector(".oom-text pre").textContent'),
                         run("oom", trace(self.names[0]), "--no-remedies"))

    def test_the_timeline_marks_the_oom_and_the_peak(self):
        entry = cli_json("oom", trace(self.names[0]))["ooms"][0]["entry"]
        self.assertIn(f"OOM at entry {entry}",
                      self.dom('document.querySelector(".oom-marker").textContent'))
        peak = cli_json("summary", trace(self.names[0]), "--at", "peak")["ranks"][0]["at"]
        self.assertIn(peak["label"].removeprefix("peak allocated (").rstrip(")"),
                      self.dom('document.querySelector(".peak-marker").textContent'))


class GenerateDynamic(ReportPage, unittest.TestCase):
    names = ("generate_dynamic",)

    def test_no_oom_part_and_the_kv_cache_shown(self):
        self.assertIsNone(self.dom('document.querySelector(".oom")'))
        self.assertIsNotNone(self.dom('document.querySelector(\'tr[data-category="kv_cache"]\')'
                                      " && true"))


class ExpandableSegments(ReportPage, unittest.TestCase):
    """A segment of more blocks than its row has pixels (563 at the peak) is embedded with its
    runs of blocks in one state merged; the totals stay (test_the_pictures_keep_the_clis_numbers)."""
    names = ("resnet__expandable_segments-True",)

    def test_runs_of_blocks_in_one_state_are_merged(self):
        segments = cli_json("segments", trace(self.names[0]), "--at", "peak")["segments"]
        data = self.dom('JSON.parse(document.getElementById("memtrail-data").textContent)')
        embedded = {s["address"]: s["blocks"] for s in data["files"][0]["segment_map"]["segments"]}
        crowded = [s for s in segments if s["blocks"] > 512]
        self.assertTrue(crowded)
        for s in crowded:
            blocks = embedded[s["address"]]
            self.assertLess(len(blocks), s["blocks"])
            self.assertTrue(all(a[2] != b[2] for a, b in zip(blocks, blocks[1:])))
            self.assertEqual(sum(b[1] for b in blocks), s["size"])
            self.assertEqual(sum(b[1] for b in blocks if b[2] == 0), s["allocated"])


class RankPairs(ReportPage, unittest.TestCase):
    names = ("fsdp2_imbalance__rank0", "fsdp2_imbalance__rank1")

    def test_the_ranks_table_is_memtrail_ranks(self):
        ranks = cli_json("ranks", *map(trace, self.names))
        job = ranks["jobs"][0]
        for row in job["ranks"]:
            cells = self.bytes_in(f'table.ranks tr[data-rank="{row["rank"]}"] td[data-bytes]')
            self.assertEqual(cells, [row["peak_allocated"]["bytes"], row["peak_reserved"]["bytes"],
                                     row["end_allocated"], row["end_reserved"]])
        self.assertEqual(self.dom('document.querySelector(".job .highest").textContent'),
                         f"rank {job['highest_peak']['rank']} peaks highest: "
                         + self.dom(f"formatBytes({job['highest_peak']['peak_reserved']})")
                         + " reserved")
        self.assertEqual(job["highest_peak"]["rank"], 1)  # rank 1 has twice the batch
        self.assertEqual(self.dom('document.querySelector(".job .explanation").textContent'),
                         job["explanation"]["summary"])


    def test_the_ranks_part_shows_every_field_a_row_carries(self):
        """Fields the ranks analysis may add to its rows (an outlier's explanation) get columns
        of their own, through the one function that draws the part."""
        ranks = cli_json("ranks", *map(trace, self.names))
        for row in ranks["jobs"][0]["ranks"]:
            row["outlier"] = {"why": f"rank {row['rank']} is special", "bytes": 5}
        headers = self.dom(f"[...ranksSection({json.dumps(ranks)})"
                           '.querySelectorAll("table.ranks th")].map(th => th.textContent)')
        self.assertIn("outlier", headers)
        cells = self.dom(f"[...ranksSection({json.dumps(ranks)})"
                         '.querySelectorAll("table.ranks td")].map(td => td.textContent)')
        self.assertIn("why: rank 1 is special; bytes: 5", cells)


class DdpPair(RankPairs):
    names = ("ddp__rank0", "ddp__rank1")

    def test_the_ranks_table_is_memtrail_ranks(self):
        ranks = cli_json("ranks", *map(trace, self.names))
        shown = self.dom('[...document.querySelectorAll("table.ranks tr[data-rank]")]'
                         ".map(r => r.dataset.rank)")
        self.assertEqual(shown, [str(r["rank"]) for r in ranks["jobs"][0]["ranks"]] + ["total"])


def format_bytes(size):
    """analysis::format_bytes, with Python's printf-style rounding (glibc's: exact ties to
    even)."""
    names, value, index = ["B", "KiB", "MiB", "GiB", "TiB"], float(size), 0
    while value >= 1024 and index + 1 < len(names):
        value /= 1024
        index += 1
    if index == 0:
        return f"{size}B"
    return ("%.2f" % value).rstrip("0").rstrip(".") + names[index]


class Formatting(unittest.TestCase):
    """The page's sizes read as the CLI's, ties in rounding included."""

    def test_format_bytes_as_the_cli(self):
        sizes = [0, 1023, 1024, 1536, 1179648, 1185415, 3019898880, 2 ** 40 * 3 + 5, 17825792,
                 1024 * 1024 * 1024 * 1023, 2 ** 30 * 5 // 8]
        with tempfile.TemporaryDirectory() as folder:
            page = pathlib.Path(folder) / "report.html"
            run("report", trace("oom_cap_fragmentation"), "-o", page)
            with report_browser.Browser() as browser:
                browser.open_report(page)
                shown = browser.evaluate(f"{json.dumps(sizes)}.map(formatBytes)")
        self.assertEqual(shown, [format_bytes(s) for s in sizes])
        self.assertEqual(shown[4], "1.12MiB")  # 1.125 exactly: printf rounds to even
        self.assertEqual(shown[6], "2.81GiB")  # as `memtrail oom` prints this trace's peak


if __name__ == "__main__":
    unittest.main()
