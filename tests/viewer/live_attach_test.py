"""memtrail-viewer following a running process under Xvfb (docs/live.md, docs/viewer.md):
samples/live_growth.c keeps 1 MiB more each step; the viewer attached to it takes pictures while
it grows, shows its last state once it exits, saves what it received, and leaves it running as
it was when it detaches or is killed.

Environment: VIEWER, PNG_CHECK, MEMTRAIL, SAMPLE_LIVE_GROWTH, VIEWER_FOLLOW (the viewer's
following without a window, which tests/gpu/viewer_attach_cost.py attaches); MEMTRAIL_VIEWER_PRELOAD in
sanitizer builds (tests/viewer/CMakeLists.txt says why). The tests run under one xvfb-run (the
script starts itself again under it), so that each viewer starts without waiting for a server.
"""
import json
import os
import pathlib
import shutil
import sys
import subprocess
import tempfile
import time
import unittest

VIEWER = os.environ["VIEWER"]
PNG_CHECK = os.environ["PNG_CHECK"]
MEMTRAIL = os.environ["MEMTRAIL"]
SAMPLE = os.environ["SAMPLE_LIVE_GROWTH"]
FOLLOW = os.environ["VIEWER_FOLLOW"]
MiB = 1 << 20
PRELOAD = os.environ.get("MEMTRAIL_VIEWER_PRELOAD")
XVFB = ["env", f"LD_PRELOAD={PRELOAD}"] if PRELOAD else []
UNDER_XVFB = "MEMTRAIL_TEST_UNDER_XVFB"


class Growing:
    """The sample, running STEPS steps of MS milliseconds; wait_for(n) returns once step n is
    done."""

    def __init__(self, steps, ms, env=None):
        self.process = subprocess.Popen([SAMPLE, str(steps), str(ms)], stdout=subprocess.PIPE,
                                        text=True, env={**os.environ, **(env or {})})
        self.pid = self.process.pid

    def wait_for(self, step):
        for line in self.process.stdout:
            if line.strip() == f"step {step}":
                return
        raise AssertionError(f"the sample ended before step {step}")

    def goes_on(self, steps):
        """Returns once `steps` more steps are done."""
        for _ in range(steps):
            if not self.process.stdout.readline():
                raise AssertionError("the sample ended")

    def finish(self):
        self.process.stdout.read()
        return self.process.wait(timeout=60)

    def sockets(self):
        """How many sockets the sample has open: its endpoint, and one per client connection."""
        folder = pathlib.Path(f"/proc/{self.pid}/fd")
        return sum(1 for fd in folder.iterdir() if os.readlink(fd).startswith("socket:"))

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()
        self.process.stdout.close()


def described(png):
    """The text the viewer writes beside a picture: "key value" lines."""
    lines = png.with_suffix(".txt").read_text().splitlines()
    return dict(line.split(" ", 1) for line in lines)


def allocated(path):
    result = subprocess.run([MEMTRAIL, "summary", str(path), "--json"], capture_output=True,
                            text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)["ranks"][0]["totals"]["allocated"]


class Attach(unittest.TestCase):
    def setUp(self):
        self.folder = pathlib.Path(tempfile.mkdtemp())

    def tearDown(self):
        shutil.rmtree(self.folder)

    def png_check(self, png):
        result = subprocess.run([PNG_CHECK, str(png), "0.02"], capture_output=True, text=True)
        self.assertEqual(result.returncode, 0, f"{png}: {result.stdout}{result.stderr}")

    def test_pictures_while_it_grows_then_its_last_state_once_it_exits(self):
        with Growing(steps=80, ms=100) as job:
            job.wait_for(2)
            start = self.folder / "start.memtrail"
            taken = subprocess.run([MEMTRAIL, "snapshot", str(job.pid), "-o", str(start)],
                                   capture_output=True, text=True, timeout=60)
            self.assertEqual(taken.returncode, 0, taken.stderr)
            viewer = subprocess.run(
                [*XVFB, VIEWER, "--attach", str(job.pid), "--screenshot",
                 str(self.folder / "shot.png"), "--every", "1", "--save",
                 str(self.folder / "saved.memtrail")],
                capture_output=True, text=True, timeout=120)
            self.assertEqual(viewer.returncode, 0, viewer.stderr)
            self.assertEqual(job.finish(), 0)
        shots = sorted(self.folder.glob("shot-*.png"), key=lambda p: int(p.stem.split("-")[1]))
        for png in shots:
            self.png_check(png)
        states = [described(png) for png in shots]
        following = [s for s in states if s["following"] == "yes"]
        self.assertGreaterEqual(len(following), 2, "two pictures while it runs")
        first, later = following[0], following[-1]
        for key in ("allocated_bytes", "trace_entries", "events_received"):
            self.assertLess(int(first[key]), int(later[key]), key)
        self.assertEqual(first["moment"], first["trace_entries"], "the present is shown")
        self.assertIn(f"attached to process {job.pid}: ", first["status"])
        last = states[-1]
        self.assertEqual(last["following"], "no", "a last picture once it exited")
        self.assertIn(f"process {job.pid} exited: showing the last state received", last["status"])
        self.assertGreaterEqual(int(last["allocated_bytes"]), int(later["allocated_bytes"]))
        # What was received reloads, between the start and the end (80 steps kept 80 MiB).
        saved = allocated(self.folder / "saved.memtrail")
        self.assertLess(allocated(start), saved)
        self.assertLessEqual(saved, 80 * MiB)
        self.assertEqual(saved, int(last["allocated_bytes"]))

    def test_a_picture_and_a_pickle_of_the_first_state_then_the_process_runs_on(self):
        with Growing(steps=1000, ms=50) as job:
            job.wait_for(5)
            viewer = subprocess.run(
                [*XVFB, VIEWER, "--attach", str(job.pid), "--screenshot",
                 str(self.folder / "now.png"), "--view", "segments", "--save",
                 str(self.folder / "now.pickle")],
                capture_output=True, text=True, timeout=120)
            self.assertEqual(viewer.returncode, 0, viewer.stderr)
            self.png_check(self.folder / "now.png")
            state = described(self.folder / "now.png")
            self.assertEqual(state["following"], "yes")
            self.assertTrue((self.folder / "now.pickle").read_bytes().startswith(b"\x80"))
            saved = allocated(self.folder / "now.pickle")
            self.assertGreaterEqual(saved, 5 * MiB)
            self.assertEqual(saved, int(state["allocated_bytes"]))
            # The viewer has detached: the process runs on, and can be attached to again.
            self.assertIsNone(job.process.poll())
            job.goes_on(3)
            again = subprocess.run([MEMTRAIL, "snapshot", str(job.pid), "-o",
                                    str(self.folder / "again.memtrail")],
                                   capture_output=True, text=True, timeout=60)
            self.assertEqual(again.returncode, 0, again.stderr)
            self.assertLess(saved, allocated(self.folder / "again.memtrail"))

    def test_a_killed_viewer_leaves_the_process_running(self):
        with Growing(steps=1000, ms=50) as job:
            job.wait_for(1)
            alone = job.sockets()
            viewer = subprocess.Popen([*XVFB, VIEWER, "--attach", str(job.pid)],
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            try:
                deadline = time.monotonic() + 30
                while job.sockets() < alone + 2:  # the viewer's two connections
                    self.assertLess(time.monotonic(), deadline, "the viewer did not attach")
                    time.sleep(0.05)
                time.sleep(0.5)
            finally:
                viewer.kill()  # SIGKILL: no detach, the sockets closed by the kernel
                viewer.wait()
            taken = subprocess.run([MEMTRAIL, "snapshot", str(job.pid), "-o",
                                    str(self.folder / "after.memtrail")],
                                   capture_output=True, text=True, timeout=60)
            self.assertEqual(taken.returncode, 0, taken.stderr)
            deadline = time.monotonic() + 10
            while job.sockets() > alone:  # the endpoint's threads for the viewer ended
                self.assertLess(time.monotonic(), deadline, "the viewer's connections stay")
                time.sleep(0.05)
            job.goes_on(3)


class Follow(unittest.TestCase):
    def test_viewer_follow_prints_each_document_then_the_exit(self):
        with Growing(steps=30, ms=100) as job:
            job.wait_for(2)
            follow = subprocess.run([FOLLOW, str(job.pid)], capture_output=True, text=True,
                                    timeout=60)
            self.assertEqual(job.finish(), 0)
        self.assertEqual(follow.returncode, 0, follow.stderr)
        lines = [json.loads(line) for line in follow.stdout.splitlines()]
        self.assertGreaterEqual(len(lines), 3)
        self.assertLess(lines[0]["trace_entries"], lines[-1]["trace_entries"])
        self.assertEqual([line["document"] for line in lines[:-1]], list(range(1, len(lines))))
        self.assertIn(f"process {job.pid} exited: showing the last state received",
                      lines[-1]["status"])
        self.assertEqual(lines[-1]["fell_behind"], 0)

    def test_falling_behind_is_counted_and_said(self):
        # A ring of 64 entries and a step a millisecond: the stream is overtaken between reads.
        with Growing(steps=2000, ms=1, env={"MEMTRAIL_MAX_ENTRIES": "64"}) as job:
            job.wait_for(2)
            follow = subprocess.run([FOLLOW, str(job.pid)], capture_output=True, text=True,
                                    timeout=120)
            self.assertEqual(job.finish(), 0)
        self.assertEqual(follow.returncode, 0, follow.stderr)
        last = json.loads(follow.stdout.splitlines()[-1])
        self.assertGreater(last["fell_behind"], 0)
        self.assertGreater(last["events_missed"], 0)
        self.assertGreaterEqual(last["document"], 2, "states are shown after falling behind")
        self.assertIn("events missed, the state they led to sent instead", last["status"])
        self.assertIn(f"process {job.pid} exited: showing the last state received", last["status"])


class CommandLine(unittest.TestCase):
    def test_clear_errors(self):
        for args, message in (
                (["--attach", "0"], "--attach wants a process id above 0"),
                (["--attach", "12", "x.memtrail"], "--attach follows one process: give it no FILE"),
                (["--attach", "12", "--every", "1"],
                 "--every and --save go with --attach PID --screenshot OUT.png"),
                (["--attach", "12", "--screenshot", "x.png", "--every", "-1"],
                 "--every wants seconds above 0, e.g. 0.5, not '-1'")):
            result = subprocess.run([VIEWER, *args], capture_output=True, text=True, timeout=30)
            self.assertEqual(result.returncode, 2, args)
            self.assertIn(message, result.stderr)

    def test_a_process_that_does_not_record_is_said(self):
        result = subprocess.run([*XVFB, VIEWER, "--attach", str(os.getpid()), "--screenshot",
                                 "/dev/null"], capture_output=True, text=True, timeout=60)
        self.assertEqual(result.returncode, 1)
        self.assertIn(f"memtrail-viewer: cannot follow process {os.getpid()}: ", result.stderr)
        self.assertIn("is not recording with memtrail", result.stderr)


if __name__ == "__main__":
    if os.environ.get(UNDER_XVFB) != "1":
        if shutil.which("xvfb-run") is None:
            sys.exit("live_attach_test: xvfb-run is missing; install the xvfb package (apt-get "
                     "install xvfb) to run the viewer's attach tests")
        os.execvpe("xvfb-run", ["xvfb-run", "-a", "-s", "-screen 0 1920x1080x24",
                                sys.executable, *sys.argv], {**os.environ, UNDER_XVFB: "1"})
    unittest.main()
