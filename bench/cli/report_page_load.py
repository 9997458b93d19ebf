#!/usr/bin/env python3
"""How long `memtrail report`'s page takes to load and draw in headless Chromium: from navigation
to the page's window.__memtrailDrawnMs (set once every part is drawn), over several loads in one
browser, with the page's size. Exits 1 when the median is over --budget-ms.

  python3 bench/cli/report_page_load.py build/bin/memtrail /tmp/report_1m.memtrail [--loads 5]

The snapshot is any file memtrail reads; bench_report (report_bench.cpp) writes a 1M-entry one
from a real trace when MEMTRAIL_BENCH_SNAPSHOT names a missing file. Prints one line and, with
--json OUT, writes the numbers.
"""
import argparse
import json
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "tests" / "cli"))
import report_browser  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("memtrail")
    parser.add_argument("snapshot", nargs="+")
    parser.add_argument("--loads", type=int, default=5)
    parser.add_argument("--budget-ms", type=float, default=1000.0)
    parser.add_argument("--json", type=pathlib.Path)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        page = pathlib.Path(folder) / "report.html"
        started = time.monotonic()
        subprocess.run([args.memtrail, "report", *args.snapshot, "-o", str(page)], check=True)
        generate_s = time.monotonic() - started
        drawn = []
        with report_browser.Browser() as browser:
            for _ in range(args.loads):
                drawn.append(browser.open_report(page))
                browser.call("Page.navigate", session=True, url="about:blank")
            if browser.errors:
                sys.exit("the page raised errors: " + "; ".join(browser.errors))
        result = {"snapshot": args.snapshot, "page_bytes": page.stat().st_size,
                  "generate_s": round(generate_s, 3), "drawn_ms": drawn,
                  "drawn_ms_median": statistics.median(drawn), "budget_ms": args.budget_ms}
    print(f"page {result['page_bytes'] / 2**20:.2f} MiB, made in {generate_s:.2f}s; "
          f"drawn in {result['drawn_ms_median']:.0f} ms (median of {args.loads}: "
          f"{', '.join(f'{d:.0f}' for d in drawn)}), budget {args.budget_ms:.0f} ms")
    if args.json:
        args.json.write_text(json.dumps(result, indent=1) + "\n")
    return 0 if result["drawn_ms_median"] <= args.budget_ms else 1


if __name__ == "__main__":
    sys.exit(main())
