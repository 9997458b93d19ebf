"""torch.cuda.memory._snapshot() and torch.cuda.memory_snapshot(): the allocator's state and
history as PyTorch's dict, read from the pickle librecorder writes (the file
pytorch.org/memory_viz and `memtrail` read)."""

from __future__ import annotations

import pickle
import tempfile
from pathlib import Path
from typing import Any, Optional

from . import _arguments, _native
from .errors import BadArgumentError


def _snapshot(device: Any = None) -> dict[str, Any]:
    """PyTorch's snapshot dict of every device (device is ignored, as torch does): "segments"
    (each with its "blocks"), "device_traces" (one list of trace entries per device, empty
    unless record_memory_history() records), "allocator_settings", "external_annotations"."""
    with tempfile.TemporaryDirectory(prefix="memtrail-snapshot-") as folder:
        path = Path(folder) / "snapshot.pickle"
        _native.check(_native.started().memtrail_dump_snapshot(bytes(path)))
        with open(path, "rb") as file:
            snapshot: dict[str, Any] = pickle.load(file)
    return snapshot


def memory_snapshot(mempool_id: Optional[tuple[int, int]] = None,
                    include_traces: bool = True) -> list[dict[str, Any]]:
    """The segments of _snapshot(), as torch.cuda.memory_snapshot(): every one, or those of the
    pool `mempool_id` (a MemPool's id, two ints). include_traces is accepted as torch takes it;
    the segments are the same either way."""
    call = "memory_snapshot"
    _arguments.flag(call, "include_traces", include_traces)
    segments: list[dict[str, Any]] = _snapshot()["segments"]
    if mempool_id is None:
        return segments
    pool = _pool_id(call, mempool_id)
    return [segment for segment in segments if tuple(segment["segment_pool_id"]) == pool]


def _pool_id(call: str, value: Any) -> tuple[int, int]:
    if not isinstance(value, (tuple, list)) or len(value) != 2:
        raise BadArgumentError(f"memtrail: {call}(): argument 'mempool_id' must be a pair of "
                               f"ints (a MemPool's id), not {value!r}")
    return (_arguments.integer(call, "mempool_id", value[0], 0, _arguments.SIZE_MAX),
            _arguments.integer(call, "mempool_id", value[1], 0, _arguments.SIZE_MAX))
