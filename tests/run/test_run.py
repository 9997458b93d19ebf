"""memtrail run on programs that know nothing of memtrail, on the simulated device.

run_program (run_program.cpp) is a CUDA runtime program linked with the shared runtime; the
Python group runs a script under a stand-in `torch` package that does what PyTorch's
CUDAPluggableAllocator does with the library it is given (loads memtrail_malloc/memtrail_free
and allocates through them), to check sitecustomize.py without PyTorch. The real PyTorch run is
in tests/gpu/run.sh.
"""

import json
import os
import pathlib
import json
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

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "support"))
from snapshot_header import snapshot_header  # noqa: E402

MEMTRAIL = os.environ["MEMTRAIL"]
PROGRAM = os.environ["RUN_PROGRAM"]
DEVICE = "sim:1GiB"


def run(args, cwd, **kwargs):
    return subprocess.run([MEMTRAIL, "run", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=120, **kwargs)


def report(command, path, cwd, *options):
    result = subprocess.run([MEMTRAIL, command, str(path), *options], cwd=cwd,
                            capture_output=True, text=True, timeout=120)
    if result.returncode != 0:
        raise AssertionError(f"memtrail {command} failed: {result.stderr}")
    return result.stdout


def report_json(command, path, cwd):
    return report(command, path, cwd, "--json")


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

    def test_summary_is_written_beside_every_dump(self):
        result = run(["--device", DEVICE, "--summary", "--dump", "run.memtrail", "--", PROGRAM],
                     self.cwd)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn("memtrail: summary written to run.memtrail.summary.json", result.stderr)
        summary = json.loads((self.cwd / "run.memtrail.summary.json").read_text())
        self.assertEqual(summary["format"], "memtrail rank summary")
        peaks = json.loads(subprocess.run(
            [MEMTRAIL, "summary", "--json", "run.memtrail"], cwd=self.cwd, capture_output=True,
            text=True, check=True).stdout)["ranks"][0]["peaks"]
        self.assertEqual(summary["peak_reserved"]["bytes"], 22 << 20)
        self.assertEqual(summary["peak_reserved"]["bytes"], peaks["reserved"]["bytes"])
        self.assertEqual(summary["peak_allocated"]["bytes"], peaks["allocated"]["bytes"])
        # Without --summary, none.
        result = run(["--device", DEVICE, "--dump", "other.memtrail", "--", PROGRAM], self.cwd)
        self.assertFalse((self.cwd / "other.memtrail.summary.json").exists())

    def test_stacks_name_the_programs_functions_with_file_and_line(self):
        result = run(["--device", DEVICE, "--dump", "run.memtrail", "--", PROGRAM], self.cwd)
        self.assertEqual(result.returncode, 0, result.stderr)
        # Without PyTorch every allocation is the allocator's: no outside memory to account for.
        self.assertNotIn("device memory used", report("summary", self.cwd / "run.memtrail",
                                                      self.cwd))
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

    def test_production_records_allocations_stacks_not_frees_and_dumps_on_oom(self):
        result = run(["--device", DEVICE, "--production", "--dump", "run.pickle", "--", PROGRAM,
                      "oom"], self.cwd)
        self.assertEqual(result.returncode, 0, result.stderr)
        # Out of memory: a snapshot beside the exit one, without --oom-dump; both named at the end.
        [oom] = list(self.cwd.glob("run-oom-*.pickle"))
        self.assertIn(f"memtrail: snapshot written to {oom.name}: ", result.stderr)
        self.assertIn("memtrail: snapshot written to run.pickle: ", result.stderr)
        with open(self.cwd / "run.pickle", "rb") as snapshot:
            trace = pickle.load(snapshot)["device_traces"][0]
        allocs = [e for e in trace if e["action"] == "alloc"]
        frees = [e for e in trace if e["action"] in ("free_requested", "free_completed")]
        self.assertTrue(allocs and frees, trace)
        self.assertTrue(all(e["frames"] for e in allocs), allocs)
        self.assertTrue(all(not e["frames"] for e in frees), frees)

    def test_production_and_another_record_are_refused_together(self):
        result = run(["--device", DEVICE, "--production", "--record", "state", "--", PROGRAM],
                     self.cwd)
        self.assertEqual(result.returncode, 2, result.stderr)
        self.assertIn("--production records as --record production", result.stderr)


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

    def allocator_settings(self, pickle_path):
        with open(pickle_path, "rb") as snapshot:
            return pickle.load(snapshot)["allocator_settings"]

    def test_pytorchs_allocator_settings_are_honoured(self):
        # PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True was silently ignored.
        env = dict(os.environ, PYTORCH_CUDA_ALLOC_CONF="expandable_segments:True")
        env.pop("PYTORCH_ALLOC_CONF", None)
        env.pop("MEMTRAIL_ALLOC_CONF", None)
        result = run(["--device", DEVICE, "--dump", "run.pickle", "--", PROGRAM], self.cwd,
                     env=env)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertNotIn("allocator settings", result.stderr)
        settings = self.allocator_settings(self.cwd / "run.pickle")
        self.assertEqual(settings["PYTORCH_CUDA_ALLOC_CONF"], "expandable_segments:True")
        self.assertTrue(settings["expandable_segments"])

    def test_alloc_conf_wins_over_pytorchs_and_says_so_once(self):
        env = dict(os.environ, PYTORCH_CUDA_ALLOC_CONF="expandable_segments:True",
                   PYTORCH_ALLOC_CONF="expandable_segments:True")
        result = run(["--device", DEVICE, "--alloc-conf", "max_split_size_mb:64", "--dump",
                      "run.pickle", "--", PROGRAM], self.cwd, env=env)
        self.assertEqual(result.returncode, 0, result.stderr)
        line = ('memtrail: allocator settings from MEMTRAIL_ALLOC_CONF="max_split_size_mb:64"; '
                'not used: PYTORCH_ALLOC_CONF="expandable_segments:True", '
                'PYTORCH_CUDA_ALLOC_CONF="expandable_segments:True"\n')
        self.assertEqual(result.stderr.count(line), 1, result.stderr)
        settings = self.allocator_settings(self.cwd / "run.pickle")
        self.assertEqual(settings["PYTORCH_CUDA_ALLOC_CONF"], "max_split_size_mb:64")
        self.assertFalse(settings["expandable_segments"])
        self.assertEqual(settings["max_split_size"], 64 << 20)

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


OUTSIDE = '''
import ctypes
blas = ctypes.CDLL(os.environ["FAKEBLAS"])
blas.fakeblas_create_workspace.restype = ctypes.c_void_p
blas.fakeblas_create_workspace.argtypes = [ctypes.c_size_t]
blas.fakeblas_destroy_workspace.argtypes = [ctypes.c_void_p]
blas.fakeblas_pin.restype = ctypes.c_void_p
blas.fakeblas_pin.argtypes = [ctypes.c_size_t]
workspace = blas.fakeblas_create_workspace(64 << 20)
print("workspace made:", bool(workspace))
print("another freed:", blas.fakeblas_destroy_workspace(blas.fakeblas_create_workspace(8 << 20)))
print("pinned:", bool(blas.fakeblas_pin(4 << 20)))
print("too much:", blas.fakeblas_create_workspace(2 << 30))
'''


class Python(Case):
    def python_run(self, mode, dump, ending="", options=()):
        (self.cwd / "torch").mkdir()
        (self.cwd / "torch" / "__init__.py").write_text(textwrap.dedent(FAKE_TORCH))
        (self.cwd / "script.py").write_text(textwrap.dedent(SCRIPT) + textwrap.dedent(ending))
        own = self.cwd / "own"
        own.mkdir()
        (own / "sitecustomize.py").write_text("import sys\nsys.modules['program_sitecustomize'] = sys\n")
        env = dict(os.environ, PYTHONPATH=f"{self.cwd}:{own}")
        return run(["--device", DEVICE, "--mode", mode, "--dump", dump, *options, "--",
                    sys.executable,
                    "script.py"], self.cwd, env=env)

    def test_pytorch_allocates_from_librecorder_with_python_frames(self):
        result = self.python_run("cache", "py.memtrail")
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn("allocator librecorder.so", result.stdout)
        self.assertIn("sitecustomize of the program ran: True", result.stdout)
        self.assertIn("peak allocated 6MiB", result.stderr)
        top = report("top", self.cwd / "py.memtrail", self.cwd)
        self.assertRegex(top, r"make_tensor \(\S*script\.py:\d+\)")

    def test_other_libraries_memory_passes_through_and_is_recorded_outside(self):
        # PyTorch's requests come from memtrail's allocator; a library's own cudaMalloc and
        # cudaHostAlloc reach CUDA (here the simulated device) untouched, are recorded as memory
        # outside the allocator, named for the library, and leave PyTorch's peaks alone.
        result = self.python_run("cache", "py.memtrail", OUTSIDE)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn("workspace made: True", result.stdout)
        self.assertIn("another freed: 0", result.stdout)
        self.assertIn("pinned: True", result.stdout)
        self.assertIn("too much: None", result.stdout)  # the device's 1 GiB is CUDA's limit
        self.assertIn("peak allocated 6MiB, peak reserved 20MiB", result.stderr)
        summary = " ".join(report("summary", self.cwd / "py.memtrail", self.cwd).split())
        self.assertIn("device memory used 84MiB of 1GiB at the snapshot:", summary)
        self.assertIn("the allocator reserved 20MiB; outside the allocator: libfakeblas.so "
                      "64MiB, context 0B, other processes 0B", summary)
        self.assertIn("pinned host memory (host, not device memory): libfakeblas.so 4MiB",
                      summary)
        self.assertRegex(summary, r"the largest outside it: 64MiB libfakeblas\.so cudaMalloc at "
                                  r"fakeblas_create_workspace")
        rank = json.loads(report_json("summary", self.cwd / "py.memtrail", self.cwd))["ranks"][0]
        accounting = rank["accounting"]
        self.assertEqual(accounting["device_used"],
                         accounting["allocator_reserved"]
                         + sum(accounting["outside_by_library"].values())
                         + accounting["context"] + accounting["other_processes"])
        self.assertEqual(accounting["outside_by_library"], {"libfakeblas.so": 64 << 20})
        self.assertEqual(accounting["pinned_host"], 4 << 20)

    def test_an_oom_caused_by_another_librarys_memory_names_it(self):
        ending = ("blas = ctypes.CDLL(os.environ['FAKEBLAS'])\n"
                  "blas.fakeblas_create_workspace.restype = ctypes.c_void_p\n"
                  "blas.fakeblas_create_workspace.argtypes = [ctypes.c_size_t]\n"
                  "print('workspace made:', bool(blas.fakeblas_create_workspace(900 << 20)))\n"
                  "print('tensor made:', make_tensor(200 << 20) is not None)\n")
        result = self.python_run("cache", "py.memtrail", "import ctypes\n" + ending,
                                 ["--oom-dump", "oom-%p.memtrail"])
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn("workspace made: True", result.stdout)
        self.assertIn("tensor made: False", result.stdout)
        dumps = list(self.cwd.glob("oom-*.memtrail"))
        self.assertEqual(len(dumps), 1, result.stderr)
        oom = " ".join(report("oom", dumps[0], self.cwd).split())
        self.assertIn("verdict: outside this allocator", oom)
        self.assertIn("held outside this allocator (libfakeblas.so 900MiB, context 0B, other "
                      "processes 0B)", oom)

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


# A stand-in for torchrun: imports torch (so that sitecustomize makes memtrail its allocator, as
# PyTorch's launcher process gets it) but allocates nothing, and starts one child per rank with
# the variables torchrun sets, each running `rank.py` or, after --no-python, the command given.
LAUNCHER = '''
import os, subprocess, sys
import torch

world = int(sys.argv[1])
command = sys.argv[3:] if sys.argv[2] == "--no-python" else [sys.executable, "rank.py"]
children = []
for rank in range(world):
    env = dict(os.environ, RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE=str(world),
               TORCHELASTIC_RUN_ID="job42")
    children.append(subprocess.Popen(command, env=env))
sys.exit(max(child.wait() for child in children))
'''

# One rank: (rank + 1) * 2 MiB, or, with OOM set, more than the device holds.
RANK_SCRIPT = '''
import os
import sys
import torch

rank = int(os.environ["RANK"])
allocator = torch.cuda.memory.current
kept = allocator.malloc((rank + 1) * (2 << 20), 0, None)
if os.environ.get("OOM"):
    failed = allocator.malloc(4 << 30, 0, None)
    # One write of the whole line: the ranks share one stdout, and print's pieces (unbuffered,
    # as under PYTHONUNBUFFERED) would interleave with the other ranks' lines.
    sys.stdout.write(f"rank {rank} out of memory: {failed is None}\\n")
    sys.stdout.flush()
'''


class Ranks(Case):
    """`memtrail run torchrun ...` and `torchrun --no-python ... memtrail run python ...` with a
    stand-in launcher of three ranks."""

    WORLD = 3

    def setUp(self):
        super().setUp()
        (self.cwd / "torch").mkdir()
        (self.cwd / "torch" / "__init__.py").write_text(textwrap.dedent(FAKE_TORCH))
        (self.cwd / "launcher.py").write_text(textwrap.dedent(LAUNCHER))
        (self.cwd / "rank.py").write_text(textwrap.dedent(RANK_SCRIPT))
        self.env = dict(os.environ, PYTHONPATH=str(self.cwd))
        for variable in ("RANK", "LOCAL_RANK", "WORLD_SIZE", "TORCHELASTIC_RUN_ID",
                         "SLURM_JOB_ID"):
            self.env.pop(variable, None)

    def test_memtrail_run_around_the_launcher_records_every_rank_and_not_the_launcher(self):
        result = run(["--device", DEVICE, "--", sys.executable, "launcher.py", str(self.WORLD),
                      "python"], self.cwd, env=self.env)
        self.assertEqual(result.returncode, 0, result.stderr)
        files = sorted(p.name for p in self.cwd.glob("*.memtrail"))
        self.assertEqual(len(files), self.WORLD, (files, result.stderr))
        for rank in range(self.WORLD):
            [name] = [f for f in files if f.startswith(f"memtrail-rank{rank}-")]
            # The closing message names every rank's file, with its own peak.
            self.assertIn(f"memtrail: snapshot written to {name}: peak allocated "
                          f"{(rank + 1) * 2}MiB", result.stderr)
            self.assertEqual(self.job_in(self.cwd / name),
                             {"id": "job42", "rank": rank, "local_rank": rank,
                              "world_size": self.WORLD})
        self.assertNotIn("no snapshot", result.stderr)

    def test_files_named_by_job_rank_and_local_rank_and_each_rank_dumps_its_own_oom(self):
        self.env["OOM"] = "1"
        result = run(["--device", DEVICE, "--dump", "snap-%j-r%r-l%l.memtrail", "--oom-dump",
                      "oom-%j-r%r.memtrail", "--", sys.executable, "launcher.py",
                      str(self.WORLD), "python"], self.cwd, env=self.env)
        self.assertEqual(result.returncode, 0, result.stderr)
        for rank in range(self.WORLD):
            self.assertIn(f"rank {rank} out of memory: True", result.stdout)
            for name in (f"snap-job42-r{rank}-l{rank}.memtrail", f"oom-job42-r{rank}.memtrail"):
                self.assertTrue((self.cwd / name).exists(), (name, result.stderr))
                self.assertEqual(result.stderr.count(f"memtrail: snapshot written to {name}: "),
                                 1, result.stderr)
        self.assertEqual(len(list(self.cwd.glob("*.memtrail"))), 2 * self.WORLD)

    def test_the_launcher_starting_memtrail_run_for_each_rank(self):
        # torchrun --no-python ... memtrail run python rank.py: one memtrail run per rank, each
        # naming its own rank's file.
        launcher = subprocess.run(
            [sys.executable, "launcher.py", str(self.WORLD), "--no-python", MEMTRAIL, "run",
             "--device", DEVICE, "--", sys.executable, "rank.py"],
            cwd=self.cwd, capture_output=True, text=True, timeout=120, env=self.env)
        self.assertEqual(launcher.returncode, 0, launcher.stderr)
        files = sorted(p.name for p in self.cwd.glob("*.memtrail"))
        self.assertEqual(len(files), self.WORLD, (files, launcher.stderr))
        for rank in range(self.WORLD):
            [name] = [f for f in files if f.startswith(f"memtrail-rank{rank}-")]
            self.assertEqual(launcher.stderr.count(f"memtrail: snapshot written to {name}: "), 1,
                             launcher.stderr)
            self.assertEqual(self.job_in(self.cwd / name)["rank"], rank)

    def job_in(self, path):
        """The job identity in a snapshot's header."""
        return snapshot_header(path).get("job")

if __name__ == "__main__":
    unittest.main()
