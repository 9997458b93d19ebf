"""Python frames in memtrail's stacks (stacks "python" and "all"), with librecorder loaded
through ctypes as a Python program loads it. Usage: python_stacks_test.py LIBRECORDER FOLDER

ctypes.PyDLL keeps the GIL during the call; ctypes.CDLL releases it, as PyTorch's bindings do
around every operator, and memtrail takes it back briefly to read the caller's Python frames.
Both record the same stacks."""

import ctypes
import inspect
import os
import pickle
import sys
import threading
import time

THIS_FILE = os.path.abspath(__file__)


def load(library_path: str, holding_gil: bool):
    library = (ctypes.PyDLL if holding_gil else ctypes.CDLL)(library_path)
    library.memtrail_malloc.restype = ctypes.c_void_p
    library.memtrail_malloc.argtypes = [ctypes.c_ssize_t, ctypes.c_int, ctypes.c_void_p]
    library.memtrail_record_memory_history.argtypes = [
        ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_size_t]
    library.memtrail_dump_snapshot.argtypes = [ctypes.c_char_p]
    library.memtrail_last_error.restype = ctypes.c_char_p
    return library


def allocate_inner(library, size, lines):
    lines["allocate_inner"] = inspect.currentframe().f_lineno + 1
    pointer = library.memtrail_malloc(size, 0, None)
    assert pointer, library.memtrail_last_error()


def allocate_outer(library, size, lines):
    lines["allocate_outer"] = inspect.currentframe().f_lineno + 1
    allocate_inner(library, size, lines)


def allocate_in_thread(library, size, lines):
    lines["allocate_in_thread"] = inspect.currentframe().f_lineno + 1
    allocate_inner(library, size, lines)


def dumped_allocations(library, path: str, sizes) -> dict:
    """Dumps a snapshot to `path` and returns the frames of the allocation of each of `sizes`
    (each allocated once) in its trace."""
    assert library.memtrail_dump_snapshot(path.encode()) == 0, library.memtrail_last_error()
    with open(path, "rb") as f:
        trace = pickle.load(f)["device_traces"][0]
    allocs = {e["size"]: e["frames"] for e in trace if e["action"] == "alloc" and e["size"] in sizes}
    assert sorted(allocs) == sorted(sizes), allocs
    return allocs


def record_and_dump(library, stacks: bytes, path: str, sizes) -> dict:
    """Allocates each of `sizes` from nested functions, the last one from a thread; returns the
    frames of each allocation and the lines they were made at."""
    assert library.memtrail_record_memory_history(b"all", b"all", stacks, 0) == 0, \
        library.memtrail_last_error()
    lines = {}
    allocate_outer(library, sizes[0], lines)
    thread = threading.Thread(target=allocate_in_thread, args=(library, sizes[1], lines))
    thread.start()
    thread.join()
    allocs = dumped_allocations(library, path, sizes)
    return {"frames": [allocs[size] for size in sizes], "lines": lines}


def python_frames(frames):
    return [(f["name"], f["line"]) for f in frames if f["filename"] == THIS_FILE]


def check_python_part(frames, lines, caller):
    """The innermost Python frames: allocate_inner, called from `caller`, at their lines."""
    own = python_frames(frames)
    assert own[:2] == [("allocate_inner", lines["allocate_inner"]),
                       (caller, lines[caller])], own


def check_python_only(recorded) -> None:
    main_frames, thread_frames = recorded["frames"]
    for frames in (main_frames, thread_frames):
        assert frames and all(f["line"] > 0 and f["filename"].endswith(".py") for f in frames), \
            frames
    check_python_part(main_frames, recorded["lines"], "allocate_outer")
    assert [f["name"] for f in main_frames][-3:] == ["record_and_dump", "main", "<module>"], \
        main_frames
    # The thread has its own Python stack: threading's bootstrap, not the main thread's frames.
    check_python_part(thread_frames, recorded["lines"], "allocate_in_thread")
    thread_names = [f["name"] for f in thread_frames]
    assert "run" in thread_names and "record_and_dump" not in thread_names, thread_frames


def check_all(recorded) -> None:
    main_frames, thread_frames = recorded["frames"]
    for frames, caller in ((main_frames, "allocate_outer"), (thread_frames, "allocate_in_thread")):
        check_python_part(frames, recorded["lines"], caller)
        names = [f["name"] for f in frames]
        # Native frames inside (the interpreter's call; ctypes' and libffi's own frames are left
        # out), the Python frames in place of the interpreter's evaluation loop, native frames
        # outside (the interpreter's start, or the thread's).
        first_python = names.index("allocate_inner")
        last_python = max(i for i, f in enumerate(frames) if f["filename"] == THIS_FILE
                          or f["filename"].endswith("threading.py"))
        assert first_python > 0, names
        assert not machinery(frames), names
        assert not any(name.startswith("_PyEval_EvalFrame") for name in names), names
        assert last_python < len(frames) - 1, names


def machinery(frames) -> list:
    """The frames of ctypes' and libffi's call into memtrail, and memtrail's own."""
    return [f for f in frames
            if any(part in f["name"] for part in ("ffi_call", "_ctypes", "memtrail"))
            or f["name"] in ("PyCFuncPtr_call", "_call_function_pointer")
            or any(part in f["filename"] for part in ("libffi", "/_ctypes", "librecorder"))]


def check_native_only(frames) -> None:
    names = [f["name"] for f in frames]
    assert any(name.startswith("_PyEval_EvalFrame") for name in names), names
    assert not machinery(frames), names
    assert not python_frames(frames), frames


def allocate_at_five_lines(library, sizes, lines) -> None:
    """Allocates each of `sizes` from one of five lines in turn: the native stack is the same at
    all of them (the interpreter calls ctypes from one place), only the Python location differs.
    Five: more than the stacks with Python frames that a kept walk remembers."""
    for i, size in enumerate(sizes):
        if i % 5 == 0:
            lines[size] = inspect.currentframe().f_lineno + 1
            pointer = library.memtrail_malloc(size, 0, None)
        elif i % 5 == 1:
            lines[size] = inspect.currentframe().f_lineno + 1
            pointer = library.memtrail_malloc(size, 0, None)
        elif i % 5 == 2:
            lines[size] = inspect.currentframe().f_lineno + 1
            pointer = library.memtrail_malloc(size, 0, None)
        elif i % 5 == 3:
            lines[size] = inspect.currentframe().f_lineno + 1
            pointer = library.memtrail_malloc(size, 0, None)
        else:
            lines[size] = inspect.currentframe().f_lineno + 1
            pointer = library.memtrail_malloc(size, 0, None)
        assert pointer, library.memtrail_last_error()


def check_lines_under_one_native_stack(library, path: str) -> None:
    """Captures whose native walk repeats whole, from Python lines that take turns, and then
    repeat: each allocation has its own line, none the line of another capture."""
    assert library.memtrail_record_memory_history(b"all", b"all", b"all", 0) == 0
    sizes = [4096 * (100 + i) for i in range(30)]
    lines = {}
    allocate_at_five_lines(library, sizes, lines)
    allocs = dumped_allocations(library, path, sizes)
    for size in sizes:
        own = python_frames(allocs[size])
        assert own[0] == ("allocate_at_five_lines", lines[size]), (size, own)
    native = [[f["name"] for f in frames if f["filename"] != THIS_FILE] for frames in
              (allocs[sizes[0]], allocs[sizes[1]])]
    assert native[0] == native[1], native


def allocate_at_depth(library, size, depth) -> None:
    """Allocates `size` from `depth` nested calls of this function, always from the same line."""
    if depth > 1:
        allocate_at_depth(library, size, depth - 1)
        return
    pointer = library.memtrail_malloc(size, 0, None)
    assert pointer, library.memtrail_last_error()


def check_depths_around_the_remembered_limit(library, path: str) -> None:
    """Stacks that differ only in how deep one function recursed, under one native stack and at
    one line, taking turns: a kept walk remembers stacks of up to 32 Python frames, so some of
    these are remembered and some are not, and two of them (40 and 41 deep) agree in their
    innermost 32 frames. Each allocation has its own depth."""
    assert library.memtrail_record_memory_history(b"all", b"all", b"all", 0) == 0
    depths = [28, 29, 30, 40, 41] * 3
    sizes = [4096 * (200 + i) for i in range(len(depths))]
    for size, depth in zip(sizes, depths):
        allocate_at_depth(library, size, depth)
    allocs = dumped_allocations(library, path, sizes)
    for size, depth in zip(sizes, depths):
        names = [name for name, _ in python_frames(allocs[size])]
        assert names.count("allocate_at_depth") == depth, (size, depth, names)


def check_no_deadlock(library, path: str) -> None:
    """Allocations that take the GIL back while another thread keeps running Python code, and
    dumps taken meanwhile: all finish, and every allocation has its Python frames."""
    assert library.memtrail_record_memory_history(b"all", b"alloc", b"python", 0) == 0
    library.memtrail_free.argtypes = [ctypes.c_void_p, ctypes.c_ssize_t, ctypes.c_int,
                                      ctypes.c_void_p]
    stop = threading.Event()
    spins = [0]

    def busy_python():
        while not stop.is_set():
            spins[0] += 1

    busy = threading.Thread(target=busy_python)
    previous_interval = sys.getswitchinterval()
    sys.setswitchinterval(0.0005)
    busy.start()
    try:
        sizes = [1 << 20] * 200
        for size in sizes:
            pointer = library.memtrail_malloc(size, 0, None)
            assert pointer, library.memtrail_last_error()
            library.memtrail_free(pointer, size, 0, None)
        assert library.memtrail_dump_snapshot(path.encode()) == 0, library.memtrail_last_error()
    finally:
        stop.set()
        busy.join()
        sys.setswitchinterval(previous_interval)
    assert spins[0] > 0
    with open(path, "rb") as f:
        trace = pickle.load(f)["device_traces"][0]
    allocs = [e for e in trace if e["action"] == "alloc" and e["size"] == 1 << 20]
    assert len(allocs) == 200, len(allocs)
    for entry in allocs:
        assert [f["name"] for f in entry["frames"]][:2] == ["check_no_deadlock", "main"], entry


def main(library_path: str, folder: str) -> None:
    os.environ["MEMTRAIL_DEVICE"] = "sim:2GiB"
    # Recording from the start, as the environment asks.
    os.environ["MEMTRAIL_RECORD"] = "all"
    os.environ["MEMTRAIL_STACKS"] = "python"
    with_gil = load(library_path, holding_gil=True)
    without_gil = load(library_path, holding_gil=False)
    lines = {}
    allocate_outer(with_gil, 2048, lines)
    path = os.path.join(folder, "environment_stacks.pickle")
    assert with_gil.memtrail_dump_snapshot(path.encode()) == 0, with_gil.memtrail_last_error()
    with open(path, "rb") as f:
        trace = pickle.load(f)["device_traces"][0]
    frames = next(e["frames"] for e in trace if e["action"] == "alloc" and e["size"] == 2048)
    check_python_part(frames, lines, "allocate_outer")
    assert all(f["filename"] == THIS_FILE for f in frames), frames

    assert with_gil.memtrail_record_memory_history(b"all", b"all", b"bogus", 0) == -1
    assert b"native, python or all" in with_gil.memtrail_last_error()

    check_python_only(record_and_dump(with_gil, b"python",
                                      os.path.join(folder, "python_stacks.pickle"), [4096, 8192]))
    check_all(record_and_dump(with_gil, b"all", os.path.join(folder, "all_stacks.pickle"),
                              [12288, 16384]))
    recorded = record_and_dump(with_gil, b"native", os.path.join(folder, "native_stacks.pickle"),
                               [20480, 24576])
    for frames in recorded["frames"]:
        check_native_only(frames)
    # A thread that released the GIL (CDLL) has its Python frames all the same.
    check_all(record_and_dump(without_gil, b"all", os.path.join(folder, "no_gil.pickle"),
                              [28672, 32768]))
    check_python_only(record_and_dump(without_gil, b"python",
                                      os.path.join(folder, "no_gil_python.pickle"),
                                      [36864, 40960]))
    check_lines_under_one_native_stack(with_gil, os.path.join(folder, "five_lines.pickle"))
    check_lines_under_one_native_stack(without_gil, os.path.join(folder, "five_lines_no_gil.pickle"))
    check_depths_around_the_remembered_limit(with_gil, os.path.join(folder, "depths.pickle"))
    check_depths_around_the_remembered_limit(without_gil,
                                             os.path.join(folder, "depths_no_gil.pickle"))
    check_no_deadlock(without_gil, os.path.join(folder, "contended.pickle"))
    print("python stacks: ok")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
