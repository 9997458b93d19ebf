"""Allocation history and snapshots, as torch.cuda.memory._record_memory_history and
_dump_snapshot have them."""

from __future__ import annotations

import os
from typing import Literal, Optional, Union

from . import _arguments, _native


def record_memory_history(
    enabled: Optional[Literal["state", "all"]] = "all",
    context: Optional[Literal["state", "alloc", "all"]] = "all",
    stacks: Literal["native", "python", "all"] = "all",
    max_entries: int = 0,
) -> None:
    """Starts (or with enabled=None stops) recording every device's history.

    enabled: None (off), "state" (live blocks only) or "all" (the trace too). context: None,
    "state", "alloc" or "all": which events keep their stack. stacks: "native", "python" or "all"
    (both). max_entries: trace entries kept per device, 0 for memtrail's default
    (MEMTRAIL_MAX_ENTRIES, else 1000000). Raises BadArgumentError for another value."""
    call = "record_memory_history"
    arguments = (_arguments.text(call, "enabled", enabled or "off"),
                 _arguments.text(call, "context", context or "none"),
                 _arguments.text(call, "stacks", stacks),
                 _arguments.integer(call, "max_entries", max_entries, 0, _arguments.SIZE_MAX))
    _native.check(_native.started().memtrail_record_memory_history(*arguments))


def clear_memory_history() -> None:
    """Forgets the trace recorded so far, on every device."""
    _native.check(_native.started().memtrail_clear_memory_history())


def dump_snapshot(path: Union[str, "os.PathLike[str]"]) -> None:
    """Writes the allocator's state and history to `path`: memtrail's format
    (memtrail-viewer, the memtrail command), or PyTorch's pickle when the name ends in ".pickle"
    (pytorch.org/memory_viz). Raises SnapshotWriteError when the file cannot be written."""
    encoded = _arguments.path("dump_snapshot", "path", path)
    _native.check(_native.started().memtrail_dump_snapshot(encoded))
