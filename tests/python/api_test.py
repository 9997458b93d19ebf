"""The memtrail package on the simulated device, without PyTorch: torch.cuda's memory API, the
exceptions, history and annotations as the dumped snapshot shows them (read back by the memtrail
command), and the post-mortem dumps.
Run by ctest with MEMTRAIL_DEVICE=sim:2GiB, MEMTRAIL_LIBRARY, MEMTRAIL_CLI and PYTHONPATH set;
argument: a folder for the files it writes."""

import os
import pickle
import signal
import subprocess
import sys
import time
import unittest
from pathlib import Path

import memtrail

OUTPUT = Path(sys.argv.pop(1)) / "python_api"
MiB = 1 << 20


def read_snapshot(path: Path) -> dict:
    """A snapshot as the memtrail command reads it, converted to PyTorch's pickle."""
    converted = path.with_suffix(".converted.pickle")
    subprocess.run([str(memtrail.cli_path()), "export", str(path), "--format", "torch-pickle",
                    "-o", str(converted)], check=True, capture_output=True)
    with open(converted, "rb") as f:
        return pickle.load(f)


def wait_for(path: Path, seconds: float = 20.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if path.exists() and path.stat().st_size > 0:
            return True
        time.sleep(0.05)
    return False


class PackageTest(unittest.TestCase):
    def test_imports_without_pytorch_or_cupy(self) -> None:
        self.assertNotIn("torch", sys.modules)
        self.assertNotIn("cupy", sys.modules)
        self.assertTrue((Path(memtrail.__file__).parent / "py.typed").exists())

    def test_a_librecorder_the_process_has_loaded_is_the_one_used(self) -> None:
        preloaded = os.environ["MEMTRAIL_LIBRARY"]
        environment = {k: v for k, v in os.environ.items() if k != "MEMTRAIL_LIBRARY"}
        environment["LD_PRELOAD"] = preloaded  # as a launcher would
        done = subprocess.run(
            [sys.executable, "-c", "import memtrail; print(memtrail.library_path())"],
            env=environment, capture_output=True, text=True, check=True)
        self.assertEqual(Path(done.stdout.strip()).resolve(), Path(preloaded).resolve())

    def test_version_is_the_librecorders(self) -> None:
        self.assertRegex(memtrail.version(), r"^\d+\.\d+\.\d+$")
        self.assertEqual(memtrail.device_count(), 1)


class MemoryApiTest(unittest.TestCase):
    def tearDown(self) -> None:
        memtrail.empty_cache()

    def test_stats_follow_allocations_with_pytorchs_names(self) -> None:
        memtrail.empty_cache()
        memtrail.reset_peak_memory_stats()
        before = memtrail.memory_stats()
        for name in ("allocated_bytes.all.current", "reserved_bytes.large_pool.peak",
                     "requested_bytes.small_pool.freed", "active.all.allocated", "num_ooms",
                     "num_alloc_retries", "num_device_alloc", "oversize_allocations.current"):
            self.assertIn(name, before)
        self.assertEqual(list(before), sorted(before))
        block = memtrail.caching_allocator_alloc(30 * MiB, device=0)
        self.assertEqual(memtrail.memory_allocated(), before["allocated_bytes.all.current"] + 30 * MiB)
        self.assertGreaterEqual(memtrail.memory_reserved("cuda:0"), 30 * MiB)
        memtrail.caching_allocator_delete(block)
        self.assertEqual(memtrail.memory_allocated(), before["allocated_bytes.all.current"])
        self.assertEqual(memtrail.max_memory_allocated(), before["allocated_bytes.all.current"] + 30 * MiB)
        peak_reserved = memtrail.max_memory_reserved()
        memtrail.empty_cache()
        self.assertEqual(memtrail.memory_reserved(), 0)
        self.assertEqual(memtrail.max_memory_reserved(), peak_reserved)
        memtrail.reset_peak_memory_stats()
        self.assertEqual(memtrail.max_memory_allocated(), 0)
        self.assertEqual(memtrail.max_memory_reserved(), 0)
        memtrail.reset_accumulated_memory_stats()
        self.assertEqual(memtrail.memory_stats()["allocated_bytes.all.allocated"], 0)

    def test_summary_is_pytorchs_table(self) -> None:
        self.assertIn("PyTorch CUDA memory summary, device ID 0", memtrail.memory_summary(0))

    def test_streams_are_kept_apart(self) -> None:
        first = memtrail.caching_allocator_alloc(MiB, stream=None)
        memtrail.caching_allocator_delete(first)
        on_stream = memtrail.caching_allocator_alloc(MiB, stream=0x1234)
        self.assertNotEqual(on_stream, first)  # a block cached for stream 0 is not reused there
        memtrail.record_stream(on_stream, 0x5678)
        memtrail.caching_allocator_delete(on_stream)

    def test_memory_fraction_limits_the_device(self) -> None:
        memtrail.set_per_process_memory_fraction(0.1)
        try:
            with self.assertRaises(memtrail.OutOfMemoryError):
                memtrail.caching_allocator_alloc(500 * MiB)
        finally:
            memtrail.set_per_process_memory_fraction(1.0)
        memtrail.caching_allocator_delete(memtrail.caching_allocator_alloc(500 * MiB))

    def test_allocator_config_applies(self) -> None:
        memtrail.set_allocator_config("expandable_segments:True")
        try:
            block = memtrail.caching_allocator_alloc(3 * MiB)
            memtrail.caching_allocator_delete(block)
        finally:
            memtrail.set_allocator_config("")


class ErrorTest(unittest.TestCase):
    def assert_error(self, cls: type, code: memtrail.ErrorCode, context) -> None:
        error = context.exception
        self.assertIsInstance(error, memtrail.MemtrailError)
        self.assertIsInstance(error, cls)
        self.assertEqual(error.code, code)
        self.assertTrue(error.message)
        self.assertEqual(str(error), error.message)

    def test_out_of_memory(self) -> None:
        with self.assertRaises(memtrail.OutOfMemoryError) as context:
            memtrail.caching_allocator_alloc(3 << 30)
        self.assert_error(memtrail.OutOfMemoryError, memtrail.ErrorCode.OUT_OF_MEMORY, context)
        self.assertIn("Tried to allocate 3.00 GiB", context.exception.message)
        self.assertGreaterEqual(memtrail.memory_stats()["num_ooms"], 1)

    def test_unknown_pointer(self) -> None:
        block = memtrail.caching_allocator_alloc(MiB)
        memtrail.caching_allocator_delete(block)
        with self.assertRaises(memtrail.UnknownPointerError) as context:
            memtrail.caching_allocator_delete(block)
        self.assert_error(memtrail.UnknownPointerError, memtrail.ErrorCode.UNKNOWN_POINTER, context)

    def test_bad_config(self) -> None:
        with self.assertRaises(memtrail.ConfigError) as context:
            memtrail.set_allocator_config("max_split_size_mb:-3")
        self.assert_error(memtrail.ConfigError, memtrail.ErrorCode.BAD_CONFIG, context)

    def test_bad_arguments(self) -> None:
        with self.assertRaises(memtrail.BadArgumentError) as context:
            memtrail.memory_stats(device=5)
        self.assert_error(memtrail.BadArgumentError, memtrail.ErrorCode.BAD_ARGUMENT, context)
        self.assertIn("memtrail: device 5 does not exist", context.exception.message)
        with self.assertRaises(memtrail.BadArgumentError):
            memtrail.caching_allocator_alloc(-1)
        with self.assertRaises(memtrail.BadArgumentError):
            memtrail.record_memory_history(enabled="sometimes")
        with self.assertRaises(memtrail.BadArgumentError):
            memtrail.set_per_process_memory_fraction(1.5)
        with self.assertRaises(ValueError):
            memtrail.memory_stats(device="cpu")

    def test_unwritable_snapshot(self) -> None:
        with self.assertRaises(memtrail.SnapshotWriteError) as context:
            memtrail.dump_snapshot(OUTPUT / "no such folder" / "x.memtrail")
        self.assert_error(memtrail.SnapshotWriteError, memtrail.ErrorCode.IO, context)

    def test_the_thread_error_is_cleared_by_a_good_call(self) -> None:
        with self.assertRaises(memtrail.OutOfMemoryError):
            memtrail.caching_allocator_alloc(3 << 30)
        memtrail.caching_allocator_delete(memtrail.caching_allocator_alloc(MiB))


class HistoryTest(unittest.TestCase):
    def test_annotations_show_in_the_snapshot(self) -> None:
        memtrail.record_memory_history(enabled="all", context="all", stacks="all")
        memtrail.clear_memory_history()

        @memtrail.range("decorated")
        def step() -> int:
            return memtrail.caching_allocator_alloc(2 * MiB)

        memtrail.set_thread_metadata("step 7")
        with memtrail.range("forward"):
            block = memtrail.caching_allocator_alloc(MiB)
        memtrail.set_thread_metadata(None)
        memtrail.marker("checkpoint")
        other = step()
        memtrail.caching_allocator_delete(block)
        memtrail.caching_allocator_delete(other)

        path = OUTPUT / "annotations.memtrail"
        memtrail.dump_snapshot(path)
        trace = read_snapshot(path)["device_traces"][0]
        labelled = [(entry["action"], entry.get("name")) for entry in trace
                    if entry["action"].startswith("user_")]
        self.assertEqual(labelled, [("user_start", "forward"), ("user_end", "forward"),
                                    ("user_marker", "checkpoint"), ("user_start", "decorated"),
                                    ("user_end", "decorated")])
        allocations = [entry for entry in trace if entry["action"] == "alloc"]
        self.assertEqual(allocations[0]["user_metadata"], "step 7")
        self.assertEqual(allocations[1]["user_metadata"], "")
        python_frames = [frame["name"] for frame in allocations[1]["frames"]
                         if frame["filename"] == __file__]
        self.assertIn("step", python_frames)

        pickled = OUTPUT / "annotations.pickle"
        memtrail.dump_snapshot(pickled)
        with open(pickled, "rb") as f:
            stages = [(a["stage"], a["name"]) for a in pickle.load(f)["external_annotations"]]
        self.assertIn(("START", "forward"), stages)
        self.assertIn(("END", "decorated"), stages)

    def test_stacks_hold_no_frame_of_the_recording_machinery(self) -> None:
        def users_own_function() -> int:
            return memtrail.caching_allocator_alloc(3 * MiB)

        for stacks in ("python", "all"):
            memtrail.record_memory_history(enabled="all", context="all", stacks=stacks)
            memtrail.clear_memory_history()
            memtrail.caching_allocator_delete(users_own_function())
            # Dumped as PyTorch's pickle by the recorder itself: the stacks as recorded.
            path = OUTPUT / f"own-frames-{stacks}.pickle"
            memtrail.dump_snapshot(path)
            with open(path, "rb") as f:
                trace = pickle.load(f)["device_traces"][0]
            frames = next(e["frames"] for e in trace if e["action"] == "alloc")
            package = str(Path(memtrail.__file__).parent)
            machinery = [f for f in frames
                         if f["filename"].startswith(package) or "ffi" in f["name"]
                         or "libffi" in f["filename"] or "_ctypes" in f["filename"]
                         or f["name"].startswith("memtrail_")]
            self.assertEqual(machinery, [], stacks)
            python_frames = [f for f in frames if f["filename"].endswith(".py")]
            # The innermost Python frame is the user's own.
            self.assertEqual((python_frames[0]["name"], python_frames[0]["filename"]),
                             ("users_own_function", __file__), stacks)

    def test_recording_off_keeps_no_trace(self) -> None:
        memtrail.record_memory_history(enabled=None)
        memtrail.clear_memory_history()
        try:
            memtrail.caching_allocator_delete(memtrail.caching_allocator_alloc(MiB))
            path = OUTPUT / "off.memtrail"
            memtrail.dump_snapshot(path)
            self.assertEqual(read_snapshot(path)["device_traces"][0], [])
        finally:
            memtrail.record_memory_history()


class PostMortemTest(unittest.TestCase):
    def test_on_oom_writes_a_snapshot_until_switched_off(self) -> None:
        memtrail.on_oom(str(OUTPUT / "oom-%p.memtrail"))
        expected = OUTPUT / f"oom-{os.getpid()}.memtrail"
        try:
            with self.assertRaises(memtrail.OutOfMemoryError):
                memtrail.caching_allocator_alloc(3 << 30)
        finally:
            memtrail.on_oom(None)
        self.assertTrue(expected.exists())
        trace = read_snapshot(expected)["device_traces"][0]
        self.assertIn("oom", [entry["action"] for entry in trace])
        expected.unlink()
        with self.assertRaises(memtrail.OutOfMemoryError):
            memtrail.caching_allocator_alloc(3 << 30)
        self.assertFalse(expected.exists())

    def test_dump_on_signal(self) -> None:
        memtrail.dump_on_signal(str(OUTPUT / "signal-%p.memtrail"), signal.SIGUSR2)
        try:
            os.kill(os.getpid(), signal.SIGUSR2)
            self.assertTrue(wait_for(OUTPUT / f"signal-{os.getpid()}.memtrail"))
        finally:
            memtrail.dump_on_signal(None)
        with self.assertRaises(memtrail.BadArgumentError):
            memtrail.dump_on_signal("x.memtrail", 100000)


class ArgumentTest(unittest.TestCase):
    """Values are checked before any call into C (issue 31): ctypes cut 2**64 + 5 to a 5-byte
    block, device 2**40 to device 0, freed the buffer of a str passed as a pointer, wrote to the
    name cut at an embedded NUL, and took max_entries=2**64 as the default (0)."""

    def assert_refused(self, error: type, words: str, call, *args, **kwargs) -> None:
        before = memtrail.memory_stats()
        with self.assertRaises(error) as raised:
            call(*args, **kwargs)
        self.assertIn(words, str(raised.exception))
        after = memtrail.memory_stats()
        self.assertEqual(after["allocation.all.allocated"], before["allocation.all.allocated"])
        self.assertEqual(after["allocated_bytes.all.current"],
                         before["allocated_bytes.all.current"])

    def test_sizes_devices_and_streams_out_of_range_are_refused(self) -> None:
        alloc = memtrail.caching_allocator_alloc
        self.assert_refused(OverflowError, "argument 'size' must be 0 to 9223372036854775807, "
                            "not 18446744073709551621", alloc, 2**64 + 5)
        self.assert_refused(ValueError, "argument 'size' must be 0 to", alloc, -1)
        self.assert_refused(TypeError, "argument 'size' must be int, not float", alloc, 1.5)
        self.assert_refused(TypeError, "argument 'size' must be int, not str", alloc, "512")
        self.assert_refused(OverflowError, "argument 'device' must be 0 to 2147483647, "
                            "not 1099511627776", alloc, 512, device=2**40)
        self.assert_refused(ValueError, "argument 'device' must be 0 to", alloc, 512, device=-1)
        self.assert_refused(OverflowError, "argument 'device'", alloc, 512,
                            device=f"cuda:{2**40}")
        self.assert_refused(OverflowError, "argument 'stream' must be 0 to", alloc, 512,
                            stream=2**64)
        self.assert_refused(OverflowError, "argument 'device'", memtrail.memory_stats, 2**32)

    def test_a_pointer_that_is_not_an_int_is_refused(self) -> None:
        block = memtrail.caching_allocator_alloc(512)
        delete = memtrail.caching_allocator_delete
        self.assert_refused(TypeError, "caching_allocator_delete(): argument 'ptr' must be int, "
                            "not str", delete, "abc")
        self.assert_refused(TypeError, "argument 'ptr' must be int, not bytes", delete, b"abc")
        self.assert_refused(OverflowError, "argument 'ptr' must be 0 to", delete, 2**64 + block)
        self.assert_refused(TypeError, "record_stream(): argument 'ptr' must be int",
                            memtrail.record_stream, "abc", None)
        memtrail.caching_allocator_delete(block)

    def test_a_nul_in_a_path_or_a_name_is_refused(self) -> None:
        cut = OUTPUT / "cut"
        with self.assertRaises(ValueError) as raised:
            memtrail.dump_snapshot(str(cut) + "\0.memtrail")
        self.assertIn("dump_snapshot(): argument 'path' contains a NUL byte", str(raised.exception))
        self.assertFalse(cut.exists())
        with self.assertRaises(TypeError):
            memtrail.dump_snapshot(42)
        for call in (memtrail.marker, memtrail.range_start, memtrail.range_end):
            with self.assertRaises(ValueError) as raised:
                call("step\0 forged")
            self.assertIn("argument 'name' contains a NUL character", str(raised.exception))
        with self.assertRaises(TypeError):
            memtrail.marker(b"bytes")
        with self.assertRaises(ValueError):
            memtrail.on_oom("oom\0.memtrail")
        with self.assertRaises(ValueError):
            memtrail.set_allocator_config("expandable_segments:True\0,max_split_size_mb:1")

    def test_max_entries_past_size_t_is_refused(self) -> None:
        with self.assertRaises(OverflowError) as raised:
            memtrail.record_memory_history(max_entries=2**64)
        self.assertIn("argument 'max_entries' must be 0 to 18446744073709551615, not "
                      "18446744073709551616", str(raised.exception))
        with self.assertRaises(ValueError):
            memtrail.record_memory_history(max_entries=-1)
        with self.assertRaises(OverflowError):
            memtrail.dump_on_signal("x.memtrail", 2**32 + 10)


if __name__ == "__main__":
    OUTPUT.mkdir(parents=True, exist_ok=True)
    unittest.main(verbosity=2)
