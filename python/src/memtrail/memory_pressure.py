"""Garbage collection by memory pressure, as R's torch does it: PyTorch never asks Python's
garbage collector for help, so device memory held only by reference cycles stays taken until a
collection happens to run. memtrail's allocator asks instead.

When the allocator would ask the device for more memory, it picks a level from how full the
device is (its callback_* settings, docs/configuration.md): none while reserved/total is under
callback_reserved_rate (0.2); full when allocated/total reaches callback_allocated_rate (0.8) or
allocated/reserved reaches callback_allocated_reserved_rate (0.8); light otherwise. Light runs
gc.collect(1) (the young generations), full gc.collect() (all). An allocation about to fail for
want of memory gets one more full collection and one more try.

Each collection is counted and timed (stats()) and, while history is recorded, shows in the
snapshot as a range named "gc.collect light" or "gc.collect full"."""

from __future__ import annotations

import atexit
import gc
import threading
import time
from typing import Optional

from . import _native

_LIGHT = 1  # MEMTRAIL_PRESSURE_LIGHT
_FULL = 2  # MEMTRAIL_PRESSURE_FULL

_state_lock = threading.Lock()
_enabled = True
_installed = False
_collecting = threading.local()
_stats = {
    "light_collections": 0,
    "full_collections": 0,
    "objects_collected": 0,
    "collection_seconds": 0.0,
}


def _collect(device: int, pressure: int, _user_data: Optional[int]) -> int:
    # A collection that allocates device memory can be asked for another: one at a time.
    if getattr(_collecting, "active", False):
        return 0
    _collecting.active = True
    try:
        level = "full" if pressure == _FULL else "light"
        lib = _native.library()
        name = f"gc.collect {level}".encode()
        lib.memtrail_range_start(name)
        start = time.perf_counter()
        found = gc.collect() if pressure == _FULL else gc.collect(1)
        elapsed = time.perf_counter() - start
        lib.memtrail_range_end(name)
        with _state_lock:
            _stats[f"{level}_collections"] += 1
            _stats["objects_collected"] += found
            _stats["collection_seconds"] += elapsed
        return 1 if found else 0
    except BaseException:  # nothing may cross back into the allocator
        return 0
    finally:
        _collecting.active = False


# Kept alive as long as librecorder may call it; _NO_CALLBACK is a NULL function pointer.
_callback = _native.COLLECT_CALLBACK(_collect)
_NO_CALLBACK = _native.COLLECT_CALLBACK(0)


def _set(enabled: bool) -> None:
    lib = _native.library()
    _native.check(lib.memtrail_set_collect_callback(_callback if enabled else _NO_CALLBACK, None))


def install_default() -> None:
    """Installs the collector at memtrail's start unless enable(False) came first."""
    global _installed
    if _installed:
        return
    with _state_lock:
        if _installed:
            return
        if _enabled:
            _set(True)
        _installed = True


def enable(enabled: bool = True) -> None:
    """Switches garbage collection by memory pressure on (the default) or off."""
    global _enabled, _installed
    with _state_lock:
        _enabled = enabled
        _set(enabled)
        _installed = True


def is_enabled() -> bool:
    return _enabled


def stats() -> dict[str, float]:
    """Collections run so far: light_collections, full_collections, objects_collected (what
    gc.collect found unreachable) and collection_seconds (time spent in them)."""
    with _state_lock:
        return dict(_stats)


def _uninstall_at_exit() -> None:
    # The interpreter is going away: librecorder must not call into it any more.
    if _installed and _enabled:
        _native.library().memtrail_set_collect_callback(_NO_CALLBACK, None)  # at exit: no one to tell


_native.start_hooks.append(install_default)
atexit.register(_uninstall_at_exit)
