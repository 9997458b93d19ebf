"""Attaching to a running process (docs/live.md): samples/live_growth.c keeps 1 MiB more each
step; `memtrail snapshot` and `memtrail top --attach` read it while it runs. A program under
`memtrail run` and a Python program using the package open their endpoint too.

Environment: MEMTRAIL, SAMPLE_LIVE_GROWTH, MEMTRAIL_LIBRARY, MEMTRAIL_PYTHON_PACKAGE, and
RUN_PROGRAM where tests/run's program is built.
"""
import json
import os
import pathlib
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest

MEMTRAIL = os.environ["MEMTRAIL"]
SAMPLE = os.environ["SAMPLE_LIVE_GROWTH"]
MiB = 1 << 20


class Growing:
    """The sample, running STEPS steps of MS milliseconds; wait_for(n) returns once step n is
    done."""

    def __init__(self, steps=60, ms=100, env=None):
        self.process = subprocess.Popen([SAMPLE, str(steps), str(ms)], stdout=subprocess.PIPE,
                                        text=True, env={**os.environ, **(env or {})})
        self.pid = self.process.pid

    def wait_for(self, step):
        for line in self.process.stdout:
            if line.strip() == f"step {step}":
                return
        raise AssertionError(f"the sample ended before step {step}")

    def finish(self):
        self.process.stdout.read()
        return self.process.wait(timeout=60)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()
        self.process.stdout.close()


def memtrail(*args, user=None):
    command = [MEMTRAIL, *map(str, args)]
    if user is not None:
        command = ["setpriv", f"--reuid={user}", f"--regid={user}", "--clear-groups", *command]
    return subprocess.run(command, capture_output=True, text=True, timeout=120)


def allocated(path):
    result = memtrail("summary", path, "--json")
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


class Snapshot(unittest.TestCase):
    def setUp(self):
        self.folder = pathlib.Path(tempfile.mkdtemp())

    def tearDown(self):
        shutil.rmtree(self.folder)

    def test_a_mid_run_snapshot_lies_between_the_start_and_the_end(self):
        live = []
        with Growing(steps=30, ms=100) as job:
            for step, name in ((2, "start.memtrail"), (12, "mid.pickle"), (24, "end.memtrail")):
                job.wait_for(step)
                result = memtrail("snapshot", job.pid, "-o", self.folder / name)
                self.assertEqual(result.returncode, 0, result.stderr)
                self.assertIn(f"snapshot of process {job.pid} (", result.stderr)
                live.append(allocated(self.folder / name))
            self.assertEqual(job.finish(), 0)
        bytes_at = [s["ranks"][0]["totals"]["allocated"] for s in live]
        # A cache block of 1 MiB per step: at least the steps done, at most a few more.
        self.assertLess(bytes_at[0], bytes_at[1])
        self.assertLess(bytes_at[1], bytes_at[2])
        self.assertGreaterEqual(bytes_at[1], 12 * MiB)
        self.assertLessEqual(bytes_at[1], 16 * MiB)

    def test_the_format_follows_the_name_or_format(self):
        with Growing(steps=40, ms=50) as job:
            job.wait_for(3)
            for name, expected in (("a.pickle", b"\x80"), ("a.memtrail", b"MEMTRAIL"),
                                   ("b.memtrail", b"\x80")):
                extra = ["--format", "pickle"] if name == "b.memtrail" else []
                result = memtrail("snapshot", job.pid, "-o", self.folder / name, *extra)
                self.assertEqual(result.returncode, 0, result.stderr)
                self.assertTrue((self.folder / name).read_bytes().startswith(expected), name)
            result = memtrail("snapshot", job.pid, "-o", self.folder / "c", "--format", "json")
            self.assertEqual(result.returncode, 2)
            self.assertIn("--format: 'json' is not a format (memtrail or pickle)", result.stderr)

    def test_clear_errors(self):
        # This process records nothing: a socket under its pid was left by an earlier process
        # with the same pid, killed before it could remove it (the client calls it stale).
        stale = pathlib.Path(f"/tmp/memtrail-{os.geteuid()}/{os.getpid()}.sock")
        if stale.is_socket():
            stale.unlink()
        result = memtrail("snapshot", os.getpid(), "-o", self.folder / "x.memtrail")
        self.assertEqual(result.returncode, 2)
        self.assertIn(f"memtrail: process {os.getpid()} is not recording with memtrail",
                      result.stderr)
        result = memtrail("snapshot", "12ab", "-o", self.folder / "x.memtrail")
        self.assertIn("'12ab' is not a process id", result.stderr)
        with Growing(steps=3, ms=10) as job:
            self.assertEqual(job.finish(), 0)
            result = memtrail("snapshot", job.pid, "-o", self.folder / "x.memtrail")
        self.assertEqual(result.returncode, 2)
        self.assertEqual(result.stderr, f"memtrail: there is no process {job.pid}\n")
        with Growing(steps=100, ms=50, env={"MEMTRAIL_LIVE": "off"}) as job:
            job.wait_for(1)
            result = memtrail("snapshot", job.pid, "-o", self.folder / "x.memtrail")
            self.assertIn("MEMTRAIL_LIVE not off", result.stderr)
        self.assertFalse((self.folder / "x.memtrail").exists())

    def test_a_killed_process_leaves_a_stale_socket_that_is_said_and_removed(self):
        with Growing(steps=100, ms=50) as job:
            job.wait_for(1)
            job.process.kill()
            job.process.wait()
        socket = pathlib.Path(f"/tmp/memtrail-{os.geteuid()}/{job.pid}.sock")
        self.assertTrue(socket.exists())
        result = memtrail("snapshot", job.pid, "-o", self.folder / "x.memtrail")
        self.assertEqual(result.returncode, 2)
        self.assertIn("was stale (left by a process that was killed) and is removed",
                      result.stderr)
        self.assertFalse(socket.exists())

    def test_another_user_cannot_attach(self):
        if os.geteuid() != 0 or shutil.which("setpriv") is None:
            self.skipTest("needs root and setpriv to run the client as nobody")
        with Growing(steps=100, ms=50) as job:
            job.wait_for(1)
            result = memtrail("snapshot", job.pid, "-o", "/dev/null", user=65534)
        self.assertEqual(result.returncode, 2)
        self.assertIn(f"process {job.pid} belongs to another user (uid 0): only its owner can "
                      "attach", result.stderr)


class Top(unittest.TestCase):
    def test_once_as_json(self):
        with Growing(steps=200, ms=50) as job:
            job.wait_for(3)
            result = memtrail("top", "--attach", job.pid, "--once", "--json", "--interval", "0.5")
        self.assertEqual(result.returncode, 0, result.stderr)
        lines = result.stdout.splitlines()
        self.assertEqual(len(lines), 1)
        update = json.loads(lines[0])
        process = update["processes"][0]
        self.assertEqual(process["pid"], job.pid)
        self.assertFalse(process["exited"])
        self.assertGreaterEqual(process["reserved"], process["allocated"])
        self.assertGreaterEqual(process["allocated"], 3 * MiB)
        self.assertEqual(process["outside"], 0)  # a simulated device: nothing else holds memory
        self.assertEqual(process["ooms"], 0)
        # Half a second of 20 steps a second, each a few events, streamed to the subscription.
        self.assertGreater(process["events"], 10)
        self.assertEqual(process["fell_behind"], 0)
        grew = process["growing"][0]
        self.assertGreater(grew["grew"], 0)
        self.assertTrue(grew["frames"][0].startswith("cache_block"), grew)

    def test_several_processes_side_by_side_as_plain_text(self):
        with Growing(steps=300, ms=30) as first, Growing(steps=300, ms=30) as second:
            first.wait_for(2)
            second.wait_for(2)
            result = memtrail("top", "--attach", first.pid, second.pid, "--updates", "2",
                              "--interval", "0.3")
        self.assertEqual(result.returncode, 0, result.stderr)
        text = result.stdout
        self.assertNotIn("\x1b", text)  # not a terminal: plain views, one after another
        self.assertIn("update 2", text)
        header = next(line for line in text.splitlines() if line.lstrip().startswith("pid "))
        self.assertIn(f"pid {first.pid}", header)
        self.assertIn(f"pid {second.pid}", header)
        for row in ("reserved", "allocated", "outside allocator", "fragmentation",
                    "OOMs so far", "events"):
            self.assertIn(row, text)
        last = text.split("update 2")[1]
        self.assertRegex(last, "reserved +[▁▂▃▄▅▆▇█]{2} ")
        self.assertEqual(last.count("grew since attaching:"), 2)
        self.assertIn("cache_block (", last)

    def test_it_follows_a_process_until_it_exits_and_keeps_its_last_state(self):
        with Growing(steps=15, ms=50) as job:
            job.wait_for(1)
            result = memtrail("top", "--attach", job.pid, "--interval", "0.2")
            self.assertEqual(job.finish(), 0)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn(f"pid {job.pid} has exited: its last state is shown", result.stdout)

    def test_live_options_need_attach(self):
        result = memtrail("top", "some.memtrail", "--once")
        self.assertEqual(result.returncode, 2)
        self.assertIn("--once is for --attach", result.stderr)
        result = memtrail("top", "--attach", "x1")
        self.assertIn("--attach: 'x1' is not a process id", result.stderr)


def summary_of(path):
    result = memtrail("summary", path, "--json")
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)["ranks"][0]


class EveryRecorder(unittest.TestCase):
    """Not only programs linked with librecorder: `memtrail run` and the Python package."""

    def setUp(self):
        self.folder = pathlib.Path(tempfile.mkdtemp())

    def tearDown(self):
        shutil.rmtree(self.folder)

    def test_a_program_under_memtrail_run(self):
        if "RUN_PROGRAM" not in os.environ:
            self.skipTest("run_program is built only with CUDA's headers")
        runner = subprocess.Popen([MEMTRAIL, "run", "--device", "sim:1GiB", "--dump",
                                   str(self.folder / "exit.memtrail"), "--",
                                   os.environ["RUN_PROGRAM"], "wait"],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            runner.stdout.readline()
            self.assertEqual(runner.stdout.readline(), "waiting\n")
            children = pathlib.Path(f"/proc/{runner.pid}/task/{runner.pid}/children")
            program = int(children.read_text().split()[0]) if children.read_text() else runner.pid
            result = memtrail("snapshot", program, "-o", self.folder / "now.memtrail")
            self.assertEqual(result.returncode, 0, result.stderr)
            top = memtrail("top", "--attach", program, "--once", "--interval", "0.2")
            self.assertEqual(top.returncode, 0, top.stderr)
            self.assertIn(f"pid {program}\n  no stack grew since attaching", top.stdout)
        finally:
            runner.send_signal(signal.SIGTERM)
            runner.communicate(timeout=60)
        self.assertGreater(summary_of(self.folder / "now.memtrail")["totals"]["allocated"], 0)

    def test_a_python_program_using_the_package(self):
        if "MEMTRAIL_PYTHON_PACKAGE" not in os.environ:
            self.skipTest("the Python package is not tested under a sanitizer (the interpreter "
                          "would need the sanitizer's runtime preloaded)")
        script = ("import sys, memtrail\n"
                  "block = memtrail.caching_allocator_alloc(64 << 20)\n"
                  "print('allocated', flush=True)\n"
                  "sys.stdin.readline()\n")
        env = dict(os.environ, PYTHONPATH=os.environ["MEMTRAIL_PYTHON_PACKAGE"],
                   MEMTRAIL_DEVICE="sim:1GiB")
        program = subprocess.Popen([sys.executable, "-c", script], stdin=subprocess.PIPE,
                                   stdout=subprocess.PIPE, text=True, env=env)
        try:
            self.assertEqual(program.stdout.readline(), "allocated\n")
            result = memtrail("snapshot", program.pid, "-o", self.folder / "now.pickle")
            self.assertEqual(result.returncode, 0, result.stderr)
        finally:
            program.communicate("\n", timeout=60)
        self.assertEqual(summary_of(self.folder / "now.pickle")["totals"]["allocated"], 64 * MiB)


if __name__ == "__main__":
    unittest.main()
