"""The C API from Python through ctypes, as a Python program (or PyTorch's pluggable allocator)
loads it. Usage: c_api_ctypes_test.py LIBRECORDER VERSION_HEADER FOLDER"""

import ctypes
import os
import pickle
import re
import sys

# memtrail_error_code's values (memtrail.h).
MEMTRAIL_OK = 0
MEMTRAIL_ERROR_OUT_OF_MEMORY = 1
MEMTRAIL_ERROR_BAD_ARGUMENT = 2
MEMTRAIL_ERROR_UNKNOWN_POINTER = 3
MEMTRAIL_ERROR_BAD_CONFIG = 4


def header_version(header_path: str) -> int:
    """MEMTRAIL_VERSION_NUMBER as the generated memtrail/version.h defines it."""
    with open(header_path) as f:
        text = f.read()
    part = {name: int(re.search(rf"#define MEMTRAIL_VERSION_{name} (\d+)", text).group(1))
            for name in ("MAJOR", "MINOR", "PATCH")}
    return part["MAJOR"] * 10000 + part["MINOR"] * 100 + part["PATCH"]


def main(library_path: str, version_header: str, folder: str) -> None:
    os.environ["MEMTRAIL_DEVICE"] = "sim:2GiB"
    lib = ctypes.CDLL(library_path)
    lib.memtrail_malloc.restype = ctypes.c_void_p
    lib.memtrail_malloc.argtypes = [ctypes.c_ssize_t, ctypes.c_int, ctypes.c_void_p]
    lib.memtrail_free.restype = None
    lib.memtrail_free.argtypes = [ctypes.c_void_p, ctypes.c_ssize_t, ctypes.c_int, ctypes.c_void_p]
    lib.memtrail_record_memory_history.argtypes = [
        ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_size_t]
    lib.memtrail_dump_snapshot.argtypes = [ctypes.c_char_p]
    lib.memtrail_range_start.argtypes = [ctypes.c_char_p]
    lib.memtrail_range_end.argtypes = [ctypes.c_char_p]
    lib.memtrail_set_thread_metadata.argtypes = [ctypes.c_char_p]
    lib.memtrail_memory_summary.restype = ctypes.c_char_p
    lib.memtrail_memory_summary.argtypes = [ctypes.c_int]
    lib.memtrail_last_error.restype = ctypes.c_char_p
    lib.memtrail_set_allocator_config.argtypes = [ctypes.c_char_p]

    def last_error() -> str:
        return lib.memtrail_last_error().decode()

    assert lib.memtrail_version() == header_version(version_header), lib.memtrail_version()

    assert lib.memtrail_record_memory_history(b"all", b"all", b"native", 0) == 0, last_error()
    assert lib.memtrail_set_thread_metadata(b"python step 3") == 0
    assert lib.memtrail_range_start(b"python range") == 0
    blocks = [lib.memtrail_malloc(size, 0, None) for size in (512, 1 << 20, 50 << 20)]
    assert all(blocks), last_error()
    lib.memtrail_free(blocks[1], 1 << 20, 0, None)
    assert last_error() == ""
    assert lib.memtrail_last_error_code() == MEMTRAIL_OK
    assert lib.memtrail_range_end(b"python range") == 0

    assert lib.memtrail_malloc(8 << 30, 0, None) is None
    assert lib.memtrail_last_error_code() == MEMTRAIL_ERROR_OUT_OF_MEMORY
    assert "out of memory" in last_error(), last_error()
    assert lib.memtrail_record_memory_history(b"bogus", None, None, 0) == -1
    assert lib.memtrail_last_error_code() == MEMTRAIL_ERROR_BAD_ARGUMENT
    assert "bogus" in last_error()
    lib.memtrail_free(blocks[1], 1 << 20, 0, None)
    assert lib.memtrail_last_error_code() == MEMTRAIL_ERROR_UNKNOWN_POINTER, last_error()
    assert lib.memtrail_set_allocator_config(b"expandable_segments:maybe") == -1
    assert lib.memtrail_last_error_code() == MEMTRAIL_ERROR_BAD_CONFIG, last_error()

    summary = lib.memtrail_memory_summary(0).decode()
    assert "Allocated memory" in summary, summary

    path = os.path.join(folder, "ctypes.pickle")
    assert lib.memtrail_dump_snapshot(path.encode()) == 0, last_error()
    with open(path, "rb") as f:
        snapshot = pickle.load(f)
    trace = snapshot["device_traces"][0]
    allocs = [e for e in trace if e["action"] == "alloc"]
    assert [e["size"] for e in allocs] == [512, 1 << 20, 50 << 20], allocs
    assert all(e["frames"] for e in allocs), "alloc entries carry native frames"
    # Stacks start at the caller of ctypes' foreign call: memtrail's own frames and the ctypes
    # and libffi machinery between the interpreter and memtrail_malloc are left out, named or not.
    frames = [frame for e in allocs for frame in e["frames"]]
    machinery = [f for f in frames
                 if any(part in f["name"] for part in ("memtrail", "ffi_call", "_ctypes"))
                 or any(part in f["filename"] for part in ("librecorder", "libffi", "/_ctypes"))
                 or f["name"] in ("PyCFuncPtr_call", "_call_function_pointer")]
    assert not machinery, machinery
    assert any(e.get("user_metadata") == "python step 3" for e in allocs)
    live = [b for s in snapshot["segments"] for b in s["blocks"] if b["state"] == "active_allocated"]
    assert len(live) == 2, live

    path = os.path.join(folder, "ctypes.memtrail")
    assert lib.memtrail_dump_snapshot(path.encode()) == 0, last_error()
    with open(path, "rb") as f:
        assert f.read(8) == b"MEMTRAIL"
    print("ctypes: all checks passed")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3])
