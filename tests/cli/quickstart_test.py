"""docs/quickstart.md shows what `memtrail oom` prints for a real PyTorch OOM: every line of its
output block must be what memtrail prints today, in order (a shown line may stop short of the
printed one, as the page cuts long lines); its `memtrail report` line makes a page that embeds
that verdict.

Environment: MEMTRAIL, TRACE_DIR (the unpacked tests/data/traces/*.tar.gz), DOCS (docs/).
"""
import json
import os
import pathlib
import re
import subprocess
import tempfile
import unittest

MEMTRAIL = os.environ["MEMTRAIL"]
TRACES = pathlib.Path(os.environ["TRACE_DIR"])
PAGE = pathlib.Path(os.environ["DOCS"]) / "quickstart.md"


def shown_output():
    """The code block that follows "What you see." on the page."""
    text = PAGE.read_text()
    start = text.index("What you see.")
    block = re.search(r"```\n(.*?)```", text[start:], re.S)
    return block.group(1).splitlines()


class Quickstart(unittest.TestCase):
    def test_the_oom_output_shown_is_what_memtrail_prints(self):
        printed = subprocess.run([MEMTRAIL, "oom", str(TRACES / "oom_graph_pool.pickle")],
                                 capture_output=True, text=True, check=True).stdout.splitlines()
        at = 0
        for line in shown_output():
            while at < len(printed) and not printed[at].startswith(line):
                at += 1
            self.assertLess(at, len(printed), f"not printed (in this order): {line!r}")
            at += 1

    def test_the_report_line_makes_the_page_with_the_verdict_shown(self):
        """The page's first `memtrail report` line, run on the same trace, embeds the verdict and
        the proven remedy the output above shows."""
        line = re.search(r"^memtrail report (\S+) -o (\S+)$", PAGE.read_text(), re.M)
        self.assertIsNotNone(line, "no `memtrail report FILE -o OUT` line on the page")
        with tempfile.TemporaryDirectory() as folder:
            out = pathlib.Path(folder) / line.group(2)
            subprocess.run([MEMTRAIL, "report", str(TRACES / "oom_graph_pool.pickle"), "-o",
                            str(out)], check=True, capture_output=True)
            html = out.read_text()
        data = json.loads(re.search(r'<script type="application/json" id="memtrail-data">'
                                    r"(.*?)</script>", html, re.S).group(1))
        oom = data["files"][0]["oom"]["ooms"][0]
        shown = [l.strip() for l in shown_output()]
        self.assertIn(f"verdict: {oom['verdict_text']} (secondary: {oom['secondary_text']})",
                      shown)
        released = [r for r in oom["remedies"]["tried"] if r["kind"] == "release_private_pools"]
        self.assertEqual([r["avoids"] for r in released], [True])
        self.assertIn("with " + released[0]["setting"].split(" (")[0], " ".join(shown))
        self.assertIn("<script>", html)
        self.assertNotRegex(html, r"<script[^>]* src=|<link[^>]* href=")  # nothing fetched

    def test_the_commands_on_the_page_exist(self):
        text = PAGE.read_text()
        for command in set(re.findall(r"^memtrail (\w+) ", text, re.M)):
            with self.subTest(command=command):
                result = subprocess.run([MEMTRAIL, command, "--help"], capture_output=True,
                                        text=True)
                self.assertEqual(result.returncode, 0, result.stderr)


if __name__ == "__main__":
    unittest.main()
