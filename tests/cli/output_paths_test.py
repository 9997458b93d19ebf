"""Every output path of every command means the same (snapshot/include/memtrail/snapshot/
output_file.hpp): a file is replaced whole, a symbolic link is written through, a device is
written directly and a write error exits 2 with the system's reason.

Environment: MEMTRAIL, TRACE_DIR.
"""
import os
import pathlib
import stat
import subprocess
import tempfile
import unittest

MEMTRAIL = os.environ["MEMTRAIL"]
TRACE = pathlib.Path(os.environ["TRACE_DIR"]) / "compile_tags.pickle"

# Each command that writes a file, as (arguments before the path, arguments after it).
WRITERS = {
    "csv": (["export", TRACE, "--format", "csv", "-o"], []),
    "folded": (["export", TRACE, "--format", "folded", "--at", "peak", "-o"], []),
    "perfetto": (["export", TRACE, "--format", "perfetto", "-o"], []),
    "torch-pickle": (["export", TRACE, "--format", "torch-pickle", "-o"], []),
    "replay snapshot": (["replay", TRACE, "-o"], []),
    "replay pickle": (["replay", TRACE, "--torch-pickle"], []),
    "stats json": (["replay", TRACE, "--stats-json"], []),
    "report": (["report", TRACE, "-o"], []),
}


def run(before, path, after):
    return subprocess.run([MEMTRAIL, *map(str, before), str(path), *map(str, after)],
                          capture_output=True, text=True)


class OutputPaths(unittest.TestCase):
    def test_a_full_device_fails_with_the_reason_and_stays_a_device(self):
        if not os.access("/dev/full", os.W_OK):
            self.skipTest("no /dev/full here")
        for name, (before, after) in WRITERS.items():
            with self.subTest(writer=name):
                result = run(before, "/dev/full", after)
                self.assertEqual(result.returncode, 2, result.stdout + result.stderr)
                self.assertIn("/dev/full: cannot write: No space left on device", result.stderr)
                self.assertTrue(stat.S_ISCHR(os.stat("/dev/full").st_mode))

    def test_dev_null_stays_a_device(self):
        for name, (before, after) in WRITERS.items():
            with self.subTest(writer=name):
                result = run(before, "/dev/null", after)
                self.assertEqual(result.returncode, 0, result.stderr)
                self.assertTrue(stat.S_ISCHR(os.stat("/dev/null").st_mode))

    def test_a_symbolic_link_is_written_through_and_stays(self):
        for name, (before, after) in WRITERS.items():
            with self.subTest(writer=name), tempfile.TemporaryDirectory() as folder:
                folder = pathlib.Path(folder)
                (folder / "runs").mkdir()
                (folder / "latest").symlink_to("runs/7")
                result = run(before, folder / "latest", after)
                self.assertEqual(result.returncode, 0, result.stderr)
                self.assertTrue((folder / "latest").is_symlink())
                self.assertGreater((folder / "runs" / "7").stat().st_size, 0)
                self.assertEqual(sorted(p.name for p in folder.iterdir()), ["latest", "runs"])

    def test_a_file_is_replaced_whole(self):
        for name, (before, after) in WRITERS.items():
            with self.subTest(writer=name), tempfile.TemporaryDirectory() as folder:
                path = pathlib.Path(folder) / "out"
                path.write_bytes(b"x" * 50_000_000)  # longer than any of these outputs
                result = run(before, path, after)
                self.assertEqual(result.returncode, 0, result.stderr)
                self.assertLess(path.stat().st_size, 50_000_000)
                self.assertEqual([p.name for p in pathlib.Path(folder).iterdir()], ["out"])

    def test_a_directory_is_refused(self):
        with tempfile.TemporaryDirectory() as folder:
            for name, (before, after) in WRITERS.items():
                with self.subTest(writer=name):
                    result = run(before, folder, after)
                    self.assertEqual(result.returncode, 2)
                    self.assertIn("is a directory, not a file to write", result.stderr)


if __name__ == "__main__":
    unittest.main()
