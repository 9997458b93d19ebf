"""Allocation history and snapshots, as torch.cuda.memory._record_memory_history and
_dump_snapshot have them."""

from __future__ import annotations

import os
from typing import Any, Literal, Optional, Union

from . import _arguments, _native
from .errors import BadArgumentError


def record_memory_history(
    enabled: Union[Literal["state", "all"], None, bool] = "all",
    *args: Any,
    **kwargs: Any,
) -> None:
    """Starts (or with enabled=None stops) recording every device's history, taking what
    torch.cuda.memory._record_memory_history takes.

    enabled: None (off), "state" (live blocks only) or "all" (the trace too); then context,
    stacks, max_entries, device, clear_history (see _record_history). A bool takes torch's legacy
    form (see _record_history_legacy). Raises BadArgumentError for another value."""
    if isinstance(enabled, bool):
        _record_history_legacy(enabled, *args, **kwargs)
    else:
        _record_history(enabled, *args, **kwargs)


def _record_history(
    enabled: Optional[str] = "all",
    context: Optional[str] = "all",
    stacks: str = "all",
    max_entries: int = 0,
    device: Any = None,
    clear_history: bool = False,
    compile_context: bool = False,
    global_record_annotations: bool = False,
) -> None:
    """context: None, "state", "alloc" or "all": which events keep their stack. stacks:
    "native", "python" or "all" (both). max_entries: trace entries kept per device, 0 for
    memtrail's default (MEMTRAIL_MAX_ENTRIES, else 1000000), where torch's default,
    sys.maxsize, keeps every entry: a long job would fill the host's memory with its trace.
    device: ignored, as torch does: every device records. clear_history: forget the trace
    recorded so far. compile_context and global_record_annotations are PyTorch's own (torch.compile
    and profiler annotations); memtrail has neither, so True is refused."""
    call = "record_memory_history"
    for name, value in (("compile_context", compile_context),
                        ("global_record_annotations", global_record_annotations)):
        if _arguments.flag(call, name, value):
            raise BadArgumentError(f"memtrail: {call}(): {name}=True needs PyTorch's own "
                                   "recorder (torch.cuda.memory._record_memory_history)")
    arguments = (_arguments.text(call, "enabled", enabled or "off"),
                 _arguments.text(call, "context", context or "none"),
                 _arguments.text(call, "stacks", stacks),
                 _arguments.integer(call, "max_entries", max_entries, 0, _arguments.SIZE_MAX))
    _arguments.flag(call, "clear_history", clear_history)
    _native.check(_native.started().memtrail_record_memory_history(*arguments))
    if clear_history:
        clear_memory_history()


def _record_history_legacy(
    enabled: bool,
    record_context: bool = True,
    trace_alloc_max_entries: int = 1,
    trace_alloc_record_context: bool = False,
    device: Any = None,
    record_context_cpp: bool = False,
    clear_history: bool = False,
    compile_context: bool = False,
    global_record_annotations: bool = False,
) -> None:
    """torch's legacy form, with its meanings: True records the trace, keeping
    trace_alloc_max_entries entries (1 unless told); stacks of live blocks (record_context), or of
    every allocation (trace_alloc_record_context); Python frames, with C++ ones when
    record_context_cpp. False stops recording."""
    call = "record_memory_history"
    for name, value in (("record_context", record_context),
                        ("trace_alloc_record_context", trace_alloc_record_context),
                        ("record_context_cpp", record_context_cpp)):
        _arguments.flag(call, name, value)
    if not enabled:
        _record_history(None, None, device=device, clear_history=clear_history,
                        compile_context=compile_context,
                        global_record_annotations=global_record_annotations)
        return
    context = "alloc" if trace_alloc_record_context else "state" if record_context else None
    entries = _arguments.integer(call, "trace_alloc_max_entries", trace_alloc_max_entries, 1,
                                 _arguments.SIZE_MAX)
    _record_history("all", context, "all" if record_context_cpp else "python", entries, device,
                    clear_history, compile_context, global_record_annotations)


def clear_memory_history() -> None:
    """Forgets the trace recorded so far, on every device."""
    _native.check(_native.started().memtrail_clear_memory_history())


def dump_snapshot(path: Union[str, "os.PathLike[str]"]) -> None:
    """Writes the allocator's state and history to `path`: memtrail's format
    (memtrail-viewer, the memtrail command), or PyTorch's pickle when the name ends in ".pickle"
    (pytorch.org/memory_viz). Raises SnapshotWriteError when the file cannot be written."""
    encoded = _arguments.path("dump_snapshot", "path", path)
    _native.check(_native.started().memtrail_dump_snapshot(encoded))
