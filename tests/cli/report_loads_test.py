#!/usr/bin/env python3
"""`memtrail report` reads each file once: the embedded commands (summary, categories, top, oom)
and the ranks table share one load of each file. Counted with inotify (every open of a file is
one event, whatever the timing): a report opens a file as often as `memtrail summary` alone
does. The page still embeds what the commands print, the ranks table included, and with
--all-frames the stacks of top and oom keep every frame.

Environment: MEMTRAIL, TRACE_DIR.
"""
import ctypes
import json
import os
import pathlib
import re
import struct
import subprocess
import tempfile
import unittest

MEMTRAIL = os.environ.get("MEMTRAIL", "memtrail")
TRACES = pathlib.Path(os.environ.get("TRACE_DIR", "build/tests/replay/traces"))
IN_OPEN = 0x20
IN_CLOSE_NOWRITE = 0x10
EVENT_HEADER = struct.Struct("iIII")  # struct inotify_event: wd, mask, cookie, len


class OpenCounter:
    """Counts the opens of each watched file from the moment it is watched (Linux inotify).
    Closes are watched too: inotify merges an event into the last one queued when they are
    alike, so opens with no close between them would count as one."""

    def __init__(self, paths):
        self.libc = ctypes.CDLL(None, use_errno=True)
        self.fd = self.libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
        if self.fd < 0:
            raise OSError(ctypes.get_errno(), "inotify_init1")
        self.path_of = {}
        for path in paths:
            wd = self.libc.inotify_add_watch(self.fd, os.fsencode(path),
                                             IN_OPEN | IN_CLOSE_NOWRITE)
            if wd < 0:
                raise OSError(ctypes.get_errno(), "inotify_add_watch", str(path))
            self.path_of[wd] = pathlib.Path(path)

    def counts(self):
        """Opens per path since the last call."""
        found = {path: 0 for path in self.path_of.values()}
        while True:
            try:
                data = os.read(self.fd, 65536)
            except BlockingIOError:
                return found
            offset = 0
            while offset < len(data):
                wd, mask, _, name_length = EVENT_HEADER.unpack_from(data, offset)
                offset += EVENT_HEADER.size + name_length
                if mask & IN_OPEN:
                    found[self.path_of[wd]] += 1

    def close(self):
        os.close(self.fd)


def run(*args):
    result = subprocess.run([MEMTRAIL, *map(str, args)], capture_output=True, text=True)
    if result.returncode != 0:
        raise AssertionError(f"memtrail {' '.join(map(str, args))}: {result.stderr}")
    return result.stdout


def page_data(page):
    text = page.read_text()
    match = re.search(r'<script type="application/json" id="memtrail-data">(.*?)</script>',
                      text, re.S)
    return json.loads(match.group(1))


class ReportLoads(unittest.TestCase):
    def setUp(self):
        self.folder = tempfile.TemporaryDirectory()
        self.page = pathlib.Path(self.folder.name) / "report.html"
        # An OOM trace (the report embeds oom twice, with and without its remedies) and a DDP
        # job's two ranks (the report adds the ranks table).
        self.oom = TRACES / "oom_cap_fragmentation.pickle"
        self.ranks = [TRACES / "ddp__rank0.pickle", TRACES / "ddp__rank1.pickle"]
        self.counter = OpenCounter([self.oom, *self.ranks])

    def tearDown(self):
        self.counter.close()
        self.folder.cleanup()

    def opens_of_one_load(self, path):
        self.counter.counts()
        run("summary", path, "--json")
        opens = self.counter.counts()[path]
        self.assertGreater(opens, 0, "inotify saw no open: the counter does not work here")
        return opens

    def test_a_report_opens_a_file_as_often_as_one_command_does(self):
        one_load = self.opens_of_one_load(self.oom)
        run("report", self.oom, "-o", self.page)
        self.assertEqual(self.counter.counts()[self.oom], one_load,
                         "the report loaded the file more than once")
        data = page_data(self.page)["files"][0]
        self.assertEqual(data["oom"], json.loads(run("oom", self.oom, "--device", "0", "--json")))
        self.assertEqual(data["summary"],
                         json.loads(run("summary", self.oom, "--device", "0", "--at", "peak",
                                        "--json")))

    def test_the_ranks_table_comes_from_the_same_loads(self):
        one_load = [self.opens_of_one_load(path) for path in self.ranks]
        run("report", *self.ranks, "-o", self.page)
        counts = self.counter.counts()
        self.assertEqual([counts[path] for path in self.ranks], one_load,
                         "the report loaded a rank's file more than once")
        self.assertEqual(page_data(self.page)["ranks"],
                         json.loads(run("ranks", *self.ranks, "--json")))

    def test_all_frames_reaches_the_commands_that_print_stacks(self):
        # An OOM in a CUDA graph's pool: its stacks hold PyTorch frames that fold by default.
        path = TRACES / "oom_graph_pool.pickle"
        run("report", path, "--all-frames", "-o", self.page)
        data = page_data(self.page)["files"][0]
        top = ["top", path, "--device", "0", "--at", "peak", "-n", "20", "--json"]
        self.assertEqual(data["top"], json.loads(run(*top, "--all-frames")))
        self.assertNotEqual(data["top"], json.loads(run(*top)),
                            "this trace's stacks do not fold: the test needs one whose do")
        self.assertEqual(data["oom"],
                         json.loads(run("oom", path, "--device", "0", "--all-frames", "--json")))


if __name__ == "__main__":
    unittest.main()
