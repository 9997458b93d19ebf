"""torch.cuda's memory API on memtrail's allocator: statistics with PyTorch's names, the
summary table, the cache, the memory fraction, the allocator settings, and raw allocations
(caching_allocator_alloc / caching_allocator_delete) to drive the allocator without a framework."""

from __future__ import annotations

import ctypes
import json
import sys
from typing import Any, Optional, Union

from . import _arguments, _native
from .errors import BadArgumentError, ErrorCode, NotStartedError

# What names a device: an index, "cuda:1", a torch.device, or None for the current one.
Device = Union[int, str, Any, None]


def current_device() -> int:
    """PyTorch's current CUDA device when PyTorch runs CUDA in this process, else 0."""
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_initialized():
        return int(torch.cuda.current_device())
    return 0


def device_index(device: Device, call: str) -> int:
    """The index of `device` (int, "cuda:N", "cuda", torch.device or None), 0 to INT_MAX; `call`
    names the function in errors."""
    if device is None:
        return current_device()
    if isinstance(device, int) and not isinstance(device, bool):
        return _arguments.integer(call, "device", device, 0, _arguments.INT_MAX)
    if isinstance(device, str):
        kind, _, index = device.partition(":")
        if kind != "cuda" or (index and not (index.isascii() and index.isdigit())):
            raise BadArgumentError(f"memtrail: {call}(): a device is an int, \"cuda\" or "
                                   f"\"cuda:N\", not {device!r}")
        if not index:
            return current_device()
        return _arguments.integer(call, "device", int(index), 0, _arguments.INT_MAX)
    torch_index = getattr(device, "index", None)  # torch.device
    if getattr(device, "type", None) == "cuda":
        if torch_index is None:
            return current_device()
        return _arguments.integer(call, "device", torch_index, 0, _arguments.INT_MAX)
    raise BadArgumentError(f"memtrail: {call}(): a device is an int, \"cuda\" or \"cuda:N\", "
                           f"not {device!r}")


def stream_handle(stream: Any, call: str) -> Optional[int]:
    """A cudaStream_t from None (the default stream), an int, or a torch/CuPy stream object."""
    if stream is None:
        return None
    if isinstance(stream, int) and not isinstance(stream, bool):
        return _arguments.address(call, "stream", stream) or None
    for attribute in ("cuda_stream", "ptr"):  # torch.cuda.Stream, cupy.cuda.Stream
        handle = getattr(stream, attribute, None)
        if isinstance(handle, int):
            return _arguments.address(call, "stream", handle) or None
    raise TypeError(f"memtrail: {call}(): a stream is None, an int or a CUDA stream object, "
                    f"not {stream!r}")


def device_count() -> int:
    """How many devices memtrail manages; 0 when its device cannot start (no CUDA device
    visible, a librecorder built without CUDA), as torch.cuda.device_count() is 0 without CUDA.
    A bad MEMTRAIL_DEVICE still raises ConfigError."""
    lib = _native.library()  # a librecorder that cannot be loaded still raises
    try:
        _native.started()
    except NotStartedError:
        return 0
    count = lib.memtrail_device_count()
    if count < 0:
        if lib.memtrail_last_error_code() == ErrorCode.NOT_STARTED:
            return 0
        _native.raise_last_error()
    return int(count)


def mem_get_info(device: Device = None) -> tuple[int, int]:
    """torch.cuda.mem_get_info(): (free, total) bytes of `device` as cudaMemGetInfo reports
    them, where memory memtrail caches unused counts as taken, as PyTorch's own cache does."""
    lib = _native.started()
    index = device_index(device, "mem_get_info")
    free, total = ctypes.c_size_t(), ctypes.c_size_t()
    stats = memory_stats(index)
    _native.check(lib.memtrail_memory_info(index, ctypes.byref(free), ctypes.byref(total)))
    # memtrail_memory_info counts the cache as free (what a program under `memtrail run` may
    # still take); torch's caller sees it taken.
    cached = stats["reserved_bytes.all.current"] - stats["allocated_bytes.all.current"]
    return max(free.value - cached, 0), total.value


def memory_stats(device: Device = None) -> dict[str, int]:
    """torch.cuda.memory_stats(): the same keys ("allocated_bytes.all.peak", "num_ooms", ...),
    the same meanings, sorted by name."""
    text = _native.started().memtrail_memory_stats_json(device_index(device, "memory_stats"))
    if text is None:
        _native.raise_last_error()
    return dict(json.loads(text))


def memory_summary(device: Device = None) -> str:
    """torch.cuda.memory_summary()'s table."""
    text = _native.started().memtrail_memory_summary(device_index(device, "memory_summary"))
    if text is None:
        _native.raise_last_error()
    return str(text.decode())


def memory_allocated(device: Device = None) -> int:
    """Bytes in blocks handed out now."""
    return memory_stats(device)["allocated_bytes.all.current"]


def max_memory_allocated(device: Device = None) -> int:
    """The peak of memory_allocated() since the start or reset_peak_memory_stats()."""
    return memory_stats(device)["allocated_bytes.all.peak"]


def memory_reserved(device: Device = None) -> int:
    """Bytes the allocator holds from the device (its segments)."""
    return memory_stats(device)["reserved_bytes.all.current"]


def max_memory_reserved(device: Device = None) -> int:
    """The peak of memory_reserved() since the start or reset_peak_memory_stats()."""
    return memory_stats(device)["reserved_bytes.all.peak"]


def reset_peak_memory_stats(device: Device = None) -> None:
    """Every peak becomes the current value."""
    _native.check(_native.started().memtrail_reset_peak_memory_stats(
        device_index(device, "reset_peak_memory_stats")))


def reset_accumulated_memory_stats(device: Device = None) -> None:
    """The allocated and freed sums restart at 0."""
    _native.check(_native.started().memtrail_reset_accumulated_memory_stats(
        device_index(device, "reset_accumulated_memory_stats")))


def empty_cache() -> None:
    """Returns the cached, unused memory of every device to the device."""
    _native.check(_native.started().memtrail_empty_cache(-1))


def set_per_process_memory_fraction(fraction: float, device: Device = None) -> None:
    """Limits `device` to fraction * its total memory (0 to 1)."""
    index = device_index(device, "set_per_process_memory_fraction")
    _native.check(_native.started().memtrail_set_memory_fraction(float(fraction), index))


def set_allocator_config(config: str) -> None:
    """Replaces the allocator settings of every device (PYTORCH_CUDA_ALLOC_CONF's syntax,
    "expandable_segments:True,max_split_size_mb:64"; docs/configuration.md). Raises ConfigError."""
    encoded = _arguments.text("set_allocator_config", "config", config)
    _native.check(_native.started().memtrail_set_allocator_config(encoded))


def caching_allocator_alloc(size: int, device: Device = None, stream: Any = None) -> int:
    """A block of at least `size` bytes on `device`, usable on `stream`; its address.
    Raises OutOfMemoryError, BadArgumentError."""
    call = "caching_allocator_alloc"
    size = _arguments.integer(call, "size", size, 0, _arguments.SSIZE_MAX)
    index = device_index(device, call)
    handle = stream_handle(stream, call)
    address = _native.started().memtrail_malloc(size, index, handle)
    if address is None:
        if size == 0:
            return 0
        _native.raise_last_error()
    return int(address)


def caching_allocator_delete(ptr: int) -> None:
    """Returns a block from caching_allocator_alloc. Raises UnknownPointerError for an address
    memtrail does not hold."""
    ptr = _arguments.address("caching_allocator_delete", "ptr", ptr)
    if not ptr:
        return
    lib = _native.started()
    lib.memtrail_free(ptr, 0, -1, None)
    _native.check_last_call()


def record_stream(ptr: int, stream: Any) -> None:
    """The block at `ptr` is in use on `stream` until the work queued there so far is done."""
    ptr = _arguments.address("record_stream", "ptr", ptr)
    handle = stream_handle(stream, "record_stream")
    _native.check(_native.started().memtrail_record_stream(ptr, handle))
