"""Python frames read without the GIL (CPython 3.11 and 3.12) are the public API's frames, frame
for frame, over many call patterns. Usage: python_frames_direct_test.py LIBRECORDER FOLDER

Two checks. Under MEMTRAIL_PYTHON_FRAMES=verify every capture reads the frames both ways and
librecorder stops the process at the first difference (code object or instruction offset); and
the snapshots of a `direct` run and an `api` run of the same program name the same frames."""

import asyncio
import ctypes
import os
import pickle
import subprocess
import sys
import threading

THIS_FILE = os.path.abspath(__file__)


class Allocator:
    """memtrail_malloc/free through ctypes; CDLL releases the GIL around each call, PyDLL keeps
    it."""

    def __init__(self, library_path: str, holding_gil: bool):
        library = (ctypes.PyDLL if holding_gil else ctypes.CDLL)(library_path)
        library.memtrail_malloc.restype = ctypes.c_void_p
        library.memtrail_malloc.argtypes = [ctypes.c_ssize_t, ctypes.c_int, ctypes.c_void_p]
        library.memtrail_free.argtypes = [ctypes.c_void_p, ctypes.c_ssize_t, ctypes.c_int,
                                          ctypes.c_void_p]
        library.memtrail_last_error.restype = ctypes.c_char_p
        self.library = library
        self.size = 4096

    def allocate(self) -> None:
        self.size += 512
        pointer = self.library.memtrail_malloc(self.size, 0, None)
        assert pointer, self.library.memtrail_last_error()
        self.library.memtrail_free(pointer, self.size, 0, None)


def nested(allocator, depth):
    if depth == 0:
        allocator.allocate()
        return
    nested(allocator, depth - 1)


class Model:
    def __init__(self, allocator):
        self.allocator = allocator
        allocator.allocate()

    def forward(self):
        self.allocator.allocate()

    @property
    def weight(self):
        self.allocator.allocate()
        return 1

    @staticmethod
    def static(allocator):
        allocator.allocate()


def generator(allocator, count):
    for _ in range(count):
        allocator.allocate()
        yield


def delegating(allocator):
    yield from generator(allocator, 2)


async def leaf(allocator):
    allocator.allocate()
    await asyncio.sleep(0)
    allocator.allocate()


async def gathered(allocator):
    await asyncio.gather(leaf(allocator), leaf(allocator))


async def asynchronous_generator(allocator):
    for _ in range(2):
        allocator.allocate()
        yield


async def consume(allocator):
    async for _ in asynchronous_generator(allocator):
        allocator.allocate()


def handling(allocator):
    try:
        raise ValueError("handled")
    except ValueError:
        allocator.allocate()
        try:
            raise KeyError("inner")
        except KeyError:
            allocator.allocate()
    finally:
        allocator.allocate()


def with_callback(allocator):
    """A C function (libc's qsort) calls back into Python, which allocates."""
    compare_type = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(ctypes.c_int),
                                    ctypes.POINTER(ctypes.c_int))

    def compare(a, b):
        allocator.allocate()
        return a[0] - b[0]

    values = (ctypes.c_int * 4)(4, 2, 3, 1)
    libc = ctypes.CDLL(None)
    libc.qsort(values, len(values), ctypes.sizeof(ctypes.c_int), compare_type(compare))
    assert list(values) == [1, 2, 3, 4]


def decorated(function):
    def wrapper(*args):
        return function(*args)
    return wrapper


@decorated
def through_decorator(allocator):
    allocator.allocate()


def patterns(allocator) -> None:
    for depth in (0, 1, 5, 30, 150):
        nested(allocator, depth)
    model = Model(allocator)
    model.forward()
    assert model.weight == 1
    Model.static(allocator)
    (lambda: allocator.allocate())()
    [allocator.allocate() for _ in range(2)]
    {i: allocator.allocate() for i in range(2)}
    list(allocator.allocate() for _ in range(2))
    list(generator(allocator, 3))
    list(delegating(allocator))
    asyncio.run(gathered(allocator))
    asyncio.run(consume(allocator))
    handling(allocator)
    with_callback(allocator)
    through_decorator(allocator)
    sorted([3, 1, 2], key=lambda value: (allocator.allocate(), value)[1])
    exec("allocator.allocate()", {"allocator": allocator})
    eval("(lambda: allocator.allocate())()", {"allocator": allocator})


def run_patterns(library_path: str, stacks: str, snapshot_path: str) -> None:
    recording = ctypes.CDLL(library_path)
    recording.memtrail_record_memory_history.argtypes = [
        ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_size_t]
    recording.memtrail_dump_snapshot.argtypes = [ctypes.c_char_p]
    assert recording.memtrail_record_memory_history(b"all", b"all", stacks.encode(), 0) == 0
    for holding_gil in (False, True):
        allocator = Allocator(library_path, holding_gil)
        patterns(allocator)
        thread = threading.Thread(target=patterns, args=(allocator,))
        thread.start()
        thread.join()
    assert recording.memtrail_dump_snapshot(snapshot_path.encode()) == 0


def run_child(library_path: str, source: str, stacks: str, snapshot_path: str) -> None:
    environment = dict(os.environ, MEMTRAIL_DEVICE="sim:2GiB", MEMTRAIL_PYTHON_FRAMES=source)
    result = subprocess.run([sys.executable, THIS_FILE, "--child", library_path, stacks,
                             snapshot_path], env=environment, capture_output=True, text=True,
                            check=False)
    assert result.returncode == 0, (source, stacks, result.returncode, result.stderr)


def python_frames_of_each_event(snapshot_path: str):
    with open(snapshot_path, "rb") as f:
        trace = pickle.load(f)["device_traces"][0]
    return [(entry["action"], entry["size"],
             [(frame["filename"], frame["name"], frame["line"]) for frame in entry["frames"]
              if frame["filename"].endswith(".py")])
            for entry in trace if entry["action"] in ("alloc", "free_requested")]


def main(library_path: str, folder: str) -> None:
    if sys.version_info[:2] not in ((3, 11), (3, 12)):
        print(f"python frames direct: Python {sys.version_info[:2]} is read through the API only")
        return
    for stacks in ("python", "all"):
        run_child(library_path, "verify", stacks, os.path.join(folder, f"verify_{stacks}.pickle"))
    recorded = {}
    for source in ("direct", "api"):
        path = os.path.join(folder, f"frames_{source}.pickle")
        run_child(library_path, source, "python", path)
        recorded[source] = python_frames_of_each_event(path)
    # The main thread's events come in the same order in both runs; the threads' too, as each
    # runs alone (started, then joined).
    assert len(recorded["direct"]) == len(recorded["api"]) > 300, len(recorded["direct"])
    for direct, api in zip(recorded["direct"], recorded["api"]):
        assert direct == api, (direct, api)
    deepest = max(len(frames) for _, _, frames in recorded["direct"])
    assert deepest == 64, deepest  # the default max_stack_depth: both readers stop there
    names = {name for _, _, frames in recorded["direct"] for _, name, _ in frames}
    # 3.12 runs comprehensions inside their function (PEP 709): no frame of their own.
    comprehensions = ("<listcomp>", "<dictcomp>", "<genexpr>") if sys.version_info < (3, 12) \
        else ("<genexpr>",)
    for expected in ("nested", "forward", "weight", "<lambda>", "generator", "delegating",
                     "leaf", "asynchronous_generator", "handling", "compare", "wrapper",
                     "run") + comprehensions:
        assert expected in names, (expected, sorted(names))
    print("python frames direct: ok")


if __name__ == "__main__":
    if sys.argv[1] == "--child":
        run_patterns(sys.argv[2], sys.argv[3], sys.argv[4])
    else:
        main(sys.argv[1], sys.argv[2])
