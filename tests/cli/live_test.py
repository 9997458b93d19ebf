"""Attaching to a running process (docs/live.md): samples/live_growth.c keeps 1 MiB more each
step; `memtrail snapshot` and `memtrail top --attach` read it while it runs.

Environment: MEMTRAIL, SAMPLE_LIVE_GROWTH.
"""
import json
import os
import pathlib
import shutil
import subprocess
import tempfile
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


if __name__ == "__main__":
    unittest.main()
