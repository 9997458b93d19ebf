"""memtrail run on programs that know nothing of memtrail, on the simulated device.

run_program (run_program.cpp) is a CUDA runtime program linked with the shared runtime; the
Python group runs a script under a stand-in `torch` package that does what PyTorch's
CUDAPluggableAllocator does with the library it is given (loads memtrail_malloc/memtrail_free
and allocates through them), to check sitecustomize.py without PyTorch. The real PyTorch run is
in tests/gpu/run.sh.
"""

import os
import pathlib
import pickle
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
import unittest

MEMTRAIL = os.environ["MEMTRAIL"]
PROGRAM = os.environ["RUN_PROGRAM"]
DEVICE = "sim:1GiB"


def run(args, cwd, **kwargs):
    return subprocess.run([MEMTRAIL, "run", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=120, **kwargs)


def report(command, path, cwd):
    result = subprocess.run([MEMTRAIL, command, str(path)], cwd=cwd, capture_output=True,
                            text=True, timeout=120)
    if result.returncode != 0:
        raise AssertionError(f"memtrail {command} failed: {result.stderr}")
    return result.stdout


def total_reserved(segments_output):
    match = re.search(r"total reserved:\s+(\S+)", segments_output)
    return match.group(1)


class Case(unittest.TestCase):
    def setUp(self):
        self.directory = tempfile.TemporaryDirectory()
        self.cwd = pathlib.Path(self.directory.name)

    def tearDown(self):
        self.directory.cleanup()


class Native(Case):
    def test_default_dump_is_named_for_the_pid_and_reported(self):
        result = run(["--device", DEVICE, "--", PROGRAM], self.cwd)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn("devices 1, free", result.stdout)
        dumps = list(self.cwd.glob("memtrail-*.memtrail"))
        self.assertEqual(len(dumps), 1, result.stderr)
        self.assertRegex(
            result.stderr,
            rf"memtrail: snapshot written to {dumps[0].name}: peak allocated 8MiB, "
            r"peak reserved 22MiB, 0 out-of-memory errors")

    def test_stacks_name_the_programs_functions_with_file_and_line(self):
        result = run(["--device", DEVICE, "--dump", "run.memtrail", "--", PROGRAM], self.cwd)
        self.assertEqual(result.returncode, 0, result.stderr)
        top = report("top", self.cwd / "run.memtrail", self.cwd)
        self.assertRegex(top, r"allocate_weights\(unsigned long\) \(\S*run_program\.cpp:\d+\)")
        self.assertRegex(top, r"main \(\S*run_program\.cpp:\d+\)")

    def test_recorded_stacks_start_at_the_programs_own_frame(self):
        # The interposer's cudaMalloc hook and memtrail's allocator under it are left out of
        # the stacks the recorder writes: the innermost frame is the program's.
        result = run(["--device", DEVICE, "--dump", "run.pickle", "--", PROGRAM], self.cwd)
        self.assertEqual(result.returncode, 0, result.stderr)
        with open(self.cwd / "run.pickle", "rb") as f:
            trace = pickle.load(f)["device_traces"][0]
        allocs = [e["frames"] for e in trace if e["action"] == "alloc"]
        self.assertTrue(allocs)
        for frames in allocs:
            self.assertRegex(frames[0]["name"], r"allocate_\w+\(", frames)
            self.assertFalse([f for f in frames if "memtrail" in f["name"]
                              or "recorder/src/" in f["filename"]
                              or "stacks/src/" in f["filename"]], frames)

    def test_out_of_memory_is_the_programs_error_and_counted(self):
        result = run(["--device", DEVICE, "--dump", "run.memtrail", "--oom-dump", "oom-%p.memtrail",
                      "--", PROGRAM, "oom"], self.cwd)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn("oversized cudaMalloc: cudaErrorMemoryAllocation", result.stdout)
        self.assertIn("1 out-of-memory error", result.stderr)
        self.assertEqual(len(list(self.cwd.glob("oom-*.memtrail"))), 1)


class Modes(Case):
    def test_cache_serves_from_memtrails_segments_observe_records_each_allocation(self):
        cache = run(["--device", DEVICE, "--mode", "cache", "--dump", "cache.memtrail", "--",
                     PROGRAM], self.cwd)
        observe = run(["--device", DEVICE, "--mode", "observe", "--dump", "observe.memtrail",
                       "--", PROGRAM], self.cwd)
        self.assertEqual(cache.returncode, 0, cache.stderr)
        self.assertEqual(observe.returncode, 0, observe.stderr)
        # cudaMemGetInfo: what the program holds (3 MiB + 4 KiB) is all that is not free, in
        # cache mode because memtrail's unused cache counts as free.
        held = (3 << 20) + 4096
        for result in (cache, observe):
            self.assertIn(f"free {(1 << 30) - held} of {1 << 30}", result.stdout)
        # cache: the 3 MiB block lives in a 20 MiB segment, 4 KiB in a 2 MiB small one.
        self.assertEqual(total_reserved(report("segments", self.cwd / "cache.memtrail",
                                               self.cwd)), "22MiB")
        # observe: each cudaMalloc is a segment of its own size; only the weights are left.
        segments = report("segments", self.cwd / "observe.memtrail", self.cwd)
        self.assertEqual(total_reserved(segments), "3MiB")
        self.assertIn("1 segments", segments)
        self.assertIn("peak reserved 8MiB", observe.stderr)
        self.assertRegex(report("top", self.cwd / "observe.memtrail", self.cwd),
                         r"allocate_weights\(unsigned long\) \(\S*run_program\.cpp:\d+\)")

    def test_dump_to_a_pickle_for_pytorchs_tools(self):
        result = run(["--device", DEVICE, "--dump", "run.pickle", "--", PROGRAM], self.cwd)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual((self.cwd / "run.pickle").read_bytes()[:1], b"\x80")
        self.assertIn("(PyTorch pickle)", report("summary", self.cwd / "run.pickle", self.cwd))

    def test_bad_options_are_refused_before_the_program_runs(self):
        for args in (["--mode", "copy"], ["--device", "sim:lots"], ["--record", "some"],
                     ["--alloc-conf", "max_split_size_mb:x"]):
            result = run([*args, "--", PROGRAM], self.cwd)
            self.assertEqual(result.returncode, 2, args)
            self.assertTrue(result.stderr.startswith("memtrail"), result.stderr)
            self.assertNotIn("devices 1", result.stdout)


class Install(Case):
    def test_a_missing_python_hook_is_reported_and_the_program_still_runs(self):
        # memtrail as installed, less lib/memtrail/python.
        built = pathlib.Path(MEMTRAIL).resolve().parent.parent
        (self.cwd / "bin").mkdir()
        (self.cwd / "lib").mkdir()
        shutil.copy(built / "bin" / "memtrail", self.cwd / "bin")
        for library in (built / "lib").glob("*.so*"):
            shutil.copy(library, self.cwd / "lib", follow_symlinks=True)
        result = subprocess.run(
            [str(self.cwd / "bin" / "memtrail"), "run", "--device", DEVICE, "--", PROGRAM],
            cwd=self.cwd, capture_output=True, text=True, timeout=120)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn("lib/memtrail/python/sitecustomize.py is missing", result.stderr)
        self.assertIn("snapshot written to", result.stderr)


class Process(Case):
    def test_exits_with_the_programs_status(self):
        result = run(["--device", DEVICE, "--", PROGRAM, "exit", "3"], self.cwd)
        self.assertEqual(result.returncode, 3, result.stderr)
        self.assertIn("snapshot written to", result.stderr)

    def test_children_forked_while_threads_allocate_run_and_dump(self):
        # 4 of 60 children of a recording program hung, in cudaMalloc or in the exit dump, on
        # locks other threads held at the fork (issue 31).
        result = run(["--device", DEVICE, "--", PROGRAM, "fork"], self.cwd)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn("children finished: 20 of 20", result.stdout)
        dumps = list(self.cwd.glob("memtrail-*.memtrail"))
        self.assertEqual(len(dumps), 21, result.stderr)  # each child's and the program's

    def test_a_missing_program_is_reported(self):
        result = run(["--device", DEVICE, "--", str(self.cwd / "nothing-here")], self.cwd)
        self.assertEqual(result.returncode, 127)
        self.assertIn("memtrail: cannot run", result.stderr)

    def start_waiting_program(self):
        """`run_program wait` under memtrail run, once it has allocated and waits for signals."""
        runner = subprocess.Popen([MEMTRAIL, "run", "--device", DEVICE, "--dump", "run.memtrail",
                                   "--", PROGRAM, "wait"], cwd=self.cwd, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True)
        self.assertEqual(runner.stdout.readline().split(",")[0], "devices 1")
        self.assertEqual(runner.stdout.readline(), "waiting\n")
        return runner

    def test_signals_reach_the_program_and_sigusr1_writes_a_snapshot(self):
        runner = self.start_waiting_program()
        try:
            runner.send_signal(signal.SIGUSR1)
            deadline = time.monotonic() + 60
            while not list(self.cwd.glob("run-signal-*.memtrail")) and time.monotonic() < deadline:
                time.sleep(0.1)
            self.assertEqual(len(list(self.cwd.glob("run-signal-*.memtrail"))), 1)
            runner.send_signal(signal.SIGTERM)
            _, stderr = runner.communicate(timeout=60)
        finally:
            runner.kill()
        # SIGTERM (Slurm, Kubernetes, timeout) writes the snapshot, then ends the program as it
        # would have.
        self.assertEqual(runner.returncode, 128 + signal.SIGTERM, stderr)
        self.assertIn("memtrail: snapshot written to run.memtrail", stderr)
        self.assertIn("activations", report("top", self.cwd / "run.memtrail", self.cwd))

    def test_exit_without_handlers_still_writes_the_snapshot(self):
        result = run(["--device", DEVICE, "--dump", "run.memtrail", "--", PROGRAM, "_exit", "5"],
                     self.cwd)
        self.assertEqual(result.returncode, 5, result.stderr)
        self.assertIn("snapshot written to run.memtrail", result.stderr)

    def test_an_earlier_file_is_never_reported_as_this_runs(self):
        (self.cwd / "run.memtrail").write_bytes(b"an earlier run's snapshot")
        result = run(["--device", DEVICE, "--dump", "run.memtrail", "--", "/bin/true"], self.cwd)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn("moved the earlier run.memtrail aside to run.memtrail.previous",
                      result.stderr)
        self.assertEqual((self.cwd / "run.memtrail.previous").read_bytes(),
                         b"an earlier run's snapshot")
        self.assertFalse((self.cwd / "run.memtrail").exists())
        self.assertIn("no snapshot at run.memtrail: the program exited with status 0 without "
                      "making a device allocation", result.stderr)

    def test_a_program_killed_outright_is_said_so(self):
        runner = self.start_waiting_program()
        try:
            runner.send_signal(signal.SIGQUIT)  # forwarded: its default ends the program at once
            _, stderr = runner.communicate(timeout=60)
        finally:
            runner.kill()
        self.assertEqual(runner.returncode, 128 + signal.SIGQUIT, stderr)
        self.assertIn("no snapshot at run.memtrail: the program was ended by signal 3", stderr)

    def test_the_dump_folder_and_device_are_checked_before_the_program_runs(self):
        marker = self.cwd / "ran"
        for args, message in (
                (["--dump", "missing/run.memtrail"], "the folder missing does not exist"),
                (["--oom-dump", "gone/oom-%p.memtrail"], "the folder gone does not exist"),
                (["--dump", str(self.cwd)], "is a directory"),
                (["--device", "sim:0"], "a simulated device needs some memory")):
            with self.subTest(args=args):
                device = [] if "--device" in args else ["--device", DEVICE]
                result = run([*device, *args, "--", "/bin/sh", "-c", f"touch {marker}"],
                             self.cwd)
                self.assertEqual(result.returncode, 2, result.stderr)
                self.assertIn(message, result.stderr)
                self.assertFalse(marker.exists(), "the program ran")


FAKE_TORCH = '''
"""A stand-in for PyTorch's CUDAPluggableAllocator: loads the two functions and uses them."""
import ctypes

class _Memory:
    current = None

    class CUDAPluggableAllocator:
        def __init__(self, path, malloc_name, free_name):
            library = ctypes.CDLL(path)
            self.path = path
            self.malloc = getattr(library, malloc_name)
            self.malloc.restype = ctypes.c_void_p
            self.malloc.argtypes = [ctypes.c_ssize_t, ctypes.c_int, ctypes.c_void_p]
            self.free = getattr(library, free_name)
            self.free.argtypes = [ctypes.c_void_p, ctypes.c_ssize_t, ctypes.c_int,
                                  ctypes.c_void_p]

    @staticmethod
    def change_current_allocator(allocator):
        _Memory.current = allocator

class cuda:
    memory = _Memory
'''

SCRIPT = '''
import os, sys
import torch

def make_tensor(size):
    return torch.cuda.memory.current.malloc(size, 0, None)

allocator = torch.cuda.memory.current
print("allocator", os.path.basename(allocator.path) if allocator else None)
kept = make_tensor(6 << 20) if allocator else None
print("sitecustomize of the program ran:", "program_sitecustomize" in sys.modules)
'''


class Python(Case):
    def python_run(self, mode, dump, ending=""):
        (self.cwd / "torch").mkdir()
        (self.cwd / "torch" / "__init__.py").write_text(textwrap.dedent(FAKE_TORCH))
        (self.cwd / "script.py").write_text(textwrap.dedent(SCRIPT) + textwrap.dedent(ending))
        own = self.cwd / "own"
        own.mkdir()
        (own / "sitecustomize.py").write_text("import sys\nsys.modules['program_sitecustomize'] = sys\n")
        env = dict(os.environ, PYTHONPATH=f"{self.cwd}:{own}")
        return run(["--device", DEVICE, "--mode", mode, "--dump", dump, "--", sys.executable,
                    "script.py"], self.cwd, env=env)

    def test_pytorch_allocates_from_librecorder_with_python_frames(self):
        result = self.python_run("cache", "py.memtrail")
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn("allocator librecorder.so", result.stdout)
        self.assertIn("sitecustomize of the program ran: True", result.stdout)
        self.assertIn("peak allocated 6MiB", result.stderr)
        top = report("top", self.cwd / "py.memtrail", self.cwd)
        self.assertRegex(top, r"make_tensor \(\S*script\.py:\d+\)")

    def test_sigterm_and_os_exit_still_write_the_snapshot(self):
        # Python's exit handlers do not run on SIGTERM (its default ends the process) nor on
        # os._exit; the interposer writes the snapshot for them.
        for name, ending, status in (
                ("sigterm", "import signal, time\nos.kill(os.getpid(), signal.SIGTERM)\n"
                            "time.sleep(60)\n", 128 + signal.SIGTERM),
                ("os_exit", "os._exit(4)\n", 4)):
            with self.subTest(ending=name):
                for leftover in ("torch", "own"):
                    shutil.rmtree(self.cwd / leftover, ignore_errors=True)
                result = self.python_run("cache", f"{name}.memtrail", ending)
                self.assertEqual(result.returncode, status, result.stderr)
                self.assertIn(f"snapshot written to {name}.memtrail: peak allocated 6MiB",
                              result.stderr)
                top = report("top", self.cwd / f"{name}.memtrail", self.cwd)
                self.assertRegex(top, r"make_tensor \(\S*script\.py:\d+\)")

    def test_a_child_whose_exec_fails_writes_nothing_of_its_parents(self):
        # subprocess's child (vfork: the parent's memory, no fork handlers) calls _exit when exec
        # fails; the interposer's _exit must not write, or use up, the parent's snapshot.
        ending = ("import subprocess\ntry:\n    subprocess.run(['/no/such/program'])\n"
                  "except OSError:\n    print('exec failed')\n")
        result = self.python_run("cache", "parent.memtrail", ending)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn("exec failed", result.stdout)
        self.assertIn("snapshot written to parent.memtrail: peak allocated 6MiB", result.stderr)
        self.assertEqual(sorted(p.name for p in self.cwd.glob("*.memtrail")), ["parent.memtrail"])

    def test_observe_leaves_pytorchs_allocator_alone(self):
        result = self.python_run("observe", "py.memtrail")
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn("allocator None", result.stdout)
        # Nothing reached memtrail (the stand-in allocates no device memory): no snapshot.
        self.assertIn("memtrail: no snapshot at py.memtrail", result.stderr)


if __name__ == "__main__":
    unittest.main()
