"""memtrail for Python: PyTorch's CUDA memory API on memtrail's caching allocator.

    import memtrail
    memtrail.torch.use()                       # PyTorch's tensors from memtrail (before CUDA starts)
    memtrail.record_memory_history()           # history with native and Python stacks
    with memtrail.range("forward"):
        ...
    memtrail.dump_snapshot("run.memtrail")     # memtrail-viewer run.memtrail
    memtrail.memory_stats()                    # torch.cuda.memory_stats()'s keys

Importing it needs neither PyTorch nor a device; memtrail starts at the first call that needs
its allocator (MEMTRAIL_DEVICE picks the device: "cuda", or "sim:80GiB" for a simulated one).
Every failure raises a MemtrailError subclass carrying memtrail's error code and message."""

from . import cupy, memory_pressure, torch
from ._native import cli_path, library, library_path, viewer_path
from .annotations import marker, range, range_end, range_start, set_thread_metadata
from .errors import (
    AllocatorSwitchError,
    BadArgumentError,
    ConfigError,
    DeviceError,
    ErrorCode,
    InternalError,
    MemtrailError,
    NotStartedError,
    OutOfMemoryError,
    SnapshotWriteError,
    UnknownPointerError,
)
from .history import clear_memory_history, dump_snapshot, record_memory_history
from .memory import (
    caching_allocator_alloc,
    caching_allocator_delete,
    device_count,
    empty_cache,
    max_memory_allocated,
    mem_get_info,
    max_memory_reserved,
    memory_allocated,
    memory_reserved,
    memory_stats,
    memory_summary,
    record_stream,
    reset_accumulated_memory_stats,
    reset_peak_memory_stats,
    set_allocator_config,
    set_per_process_memory_fraction,
)
from .post_mortem import dump_on_signal, on_oom
from .snapshot import _snapshot, memory_snapshot


def version() -> str:
    """The version of the librecorder in use ("0.1.0")."""
    number = library().memtrail_version()
    return f"{number // 10000}.{number // 100 % 100}.{number % 100}"


def gc_stats() -> dict[str, float]:
    """The garbage collections memory pressure ran (memory_pressure.stats())."""
    return memory_pressure.stats()


__all__ = [
    "_snapshot",
    "AllocatorSwitchError", "BadArgumentError", "ConfigError", "DeviceError", "ErrorCode",
    "InternalError", "MemtrailError", "NotStartedError", "OutOfMemoryError",
    "SnapshotWriteError", "UnknownPointerError",
    "caching_allocator_alloc", "caching_allocator_delete", "clear_memory_history", "cli_path",
    "cupy", "device_count", "dump_on_signal", "dump_snapshot", "empty_cache", "gc_stats",
    "library", "library_path", "marker", "max_memory_allocated", "max_memory_reserved",
    "mem_get_info", "memory_allocated", "memory_pressure", "memory_reserved", "memory_snapshot", "memory_stats", "memory_summary",
    "on_oom", "range", "range_end", "range_start", "record_memory_history", "record_stream",
    "reset_accumulated_memory_stats", "reset_peak_memory_stats", "set_allocator_config",
    "set_per_process_memory_fraction", "set_thread_metadata", "torch", "version", "viewer_path",
]
