"""librecorder, found and loaded once, with every C function of memtrail.h declared once.

Where librecorder comes from: MEMTRAIL_LIBRARY (a path to a librecorder.so, for a build tree
or an installed prefix), else a librecorder the process has loaded already (a launcher's
LD_PRELOAD), else the copy this package carries (memtrail/_native, put there when the package
was built). Loading starts nothing: memtrail starts its device at the first call that needs
it."""

from __future__ import annotations

import ctypes
import os
import threading
from pathlib import Path
from typing import Callable, Optional

from .errors import ErrorCode, NotStartedError, error_for

LIBRARY_VARIABLE = "MEMTRAIL_LIBRARY"
CLI_VARIABLE = "MEMTRAIL_CLI"
VIEWER_VARIABLE = "MEMTRAIL_VIEWER"
_CARRIED = Path(__file__).resolve().parent / "_native"

# int (*)(int device, int pressure, void* user_data): memtrail_collect_callback.
COLLECT_CALLBACK = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_void_p)

# name: (restype, argtypes). Pointers are c_void_p (a plain int would be cut to 32 bits), text is
# c_char_p, sizes are c_ssize_t / c_size_t as the header declares them.
_SIGNATURES: dict[str, tuple[Optional[type], list[type]]] = {
    "memtrail_version": (ctypes.c_int, []),
    "memtrail_last_error": (ctypes.c_char_p, []),
    "memtrail_last_error_code": (ctypes.c_int, []),
    "memtrail_malloc": (ctypes.c_void_p, [ctypes.c_ssize_t, ctypes.c_int, ctypes.c_void_p]),
    "memtrail_free": (None, [ctypes.c_void_p, ctypes.c_ssize_t, ctypes.c_int, ctypes.c_void_p]),
    "memtrail_record_memory_history": (
        ctypes.c_int, [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_size_t]),
    "memtrail_clear_memory_history": (ctypes.c_int, []),
    "memtrail_dump_snapshot": (ctypes.c_int, [ctypes.c_char_p]),
    "memtrail_range_start": (ctypes.c_int, [ctypes.c_char_p]),
    "memtrail_range_end": (ctypes.c_int, [ctypes.c_char_p]),
    "memtrail_marker": (ctypes.c_int, [ctypes.c_char_p]),
    "memtrail_set_thread_metadata": (ctypes.c_int, [ctypes.c_char_p]),
    "memtrail_empty_cache": (ctypes.c_int, [ctypes.c_int]),
    "memtrail_record_stream": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_void_p]),
    "memtrail_set_memory_fraction": (ctypes.c_int, [ctypes.c_double, ctypes.c_int]),
    "memtrail_set_allocator_config": (ctypes.c_int, [ctypes.c_char_p]),
    "memtrail_memory_summary": (ctypes.c_char_p, [ctypes.c_int]),
    "memtrail_memory_stats_json": (ctypes.c_char_p, [ctypes.c_int]),
    "memtrail_reset_peak_memory_stats": (ctypes.c_int, [ctypes.c_int]),
    "memtrail_reset_accumulated_memory_stats": (ctypes.c_int, [ctypes.c_int]),
    "memtrail_set_oom_dump": (ctypes.c_int, [ctypes.c_char_p]),
    "memtrail_set_signal_dump": (ctypes.c_int, [ctypes.c_int, ctypes.c_char_p]),
    "memtrail_set_collect_callback": (ctypes.c_int, [COLLECT_CALLBACK, ctypes.c_void_p]),
    "memtrail_device_count": (ctypes.c_int, []),
    "memtrail_memory_info": (
        ctypes.c_int, [ctypes.c_int, ctypes.POINTER(ctypes.c_size_t), ctypes.POINTER(ctypes.c_size_t)]),
}

_lock = threading.Lock()
_library: Optional[ctypes.CDLL] = None


def _loaded_librecorder() -> Optional[Path]:
    """A librecorder the process has loaded already (preloaded by a launcher, or loaded by a
    program before importing memtrail): one process, one allocator."""
    try:
        with open("/proc/self/maps") as maps:
            for line in maps:
                fields = line.split(maxsplit=5)
                if len(fields) == 6 and Path(fields[5].strip()).name.startswith("librecorder.so"):
                    return Path(fields[5].strip())
    except OSError:
        pass
    return None


def library_path() -> Path:
    """The librecorder this package uses: MEMTRAIL_LIBRARY, else the one the process has loaded
    already, else the carried copy."""
    chosen = os.environ.get(LIBRARY_VARIABLE)
    if chosen:
        return Path(chosen)
    return _loaded_librecorder() or _CARRIED / "librecorder.so.0"


def cli_path() -> Path:
    """The memtrail command this package uses (MEMTRAIL_CLI, else the carried copy)."""
    chosen = os.environ.get(CLI_VARIABLE)
    return Path(chosen) if chosen else _CARRIED / "memtrail"


def viewer_path() -> Path:
    """The memtrail-viewer this package uses (MEMTRAIL_VIEWER, else the carried copy, present when
    the package was built with it)."""
    chosen = os.environ.get(VIEWER_VARIABLE)
    return Path(chosen) if chosen else _CARRIED / "memtrail-viewer"


def _load() -> ctypes.CDLL:
    path = library_path()
    try:
        # CDLL lets the GIL go around every call: other Python threads run while one allocates.
        library = ctypes.CDLL(str(path))
    except OSError as error:
        raise NotStartedError(
            f"memtrail: cannot load librecorder from {path} ({error}); reinstall the package, "
            f"or set {LIBRARY_VARIABLE} to a librecorder.so", ErrorCode.NOT_STARTED) from error
    for name, (restype, argtypes) in _SIGNATURES.items():
        try:
            function = getattr(library, name)
        except AttributeError as error:
            raise NotStartedError(
                f"memtrail: {path} has no {name}: it is older than this package; use the "
                "librecorder the package was built with", ErrorCode.NOT_STARTED) from error
        function.restype = restype
        function.argtypes = argtypes
    return library


def library() -> ctypes.CDLL:
    """librecorder with its functions declared, loaded at the first call.
    Raises NotStartedError when it cannot be loaded."""
    global _library
    if _library is None:
        with _lock:
            if _library is None:
                _library = _load()
    return _library


def raise_last_error() -> None:
    """Raises the calling thread's last memtrail error as its exception class."""
    lib = library()
    code = lib.memtrail_last_error_code()
    message = (lib.memtrail_last_error() or b"").decode(errors="replace")
    raise error_for(code, message or f"memtrail: error {code}")


def check(status: int) -> None:
    """For the functions that return 0 or -1."""
    if status != 0:
        raise_last_error()


def check_last_call() -> None:
    """For the functions that return nothing (memtrail_free): the thread's error says."""
    if library().memtrail_last_error_code() != ErrorCode.OK:
        raise_last_error()


# What must happen when memtrail starts (memory_pressure installs its collector), added by the
# modules that need it when they are imported.
start_hooks: list[Callable[[], None]] = []


def started() -> ctypes.CDLL:
    """library(), with every start hook run: every call that starts memtrail's device goes
    through here."""
    lib = library()
    for hook in start_hooks:
        hook()
    return lib

