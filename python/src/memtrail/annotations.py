"""Annotations in the recorded history: ranges, markers and thread metadata, shown in the
snapshot's timeline (memtrail-viewer, `memtrail annotations`)."""

from __future__ import annotations

import contextlib
from types import TracebackType
from typing import Optional

from . import _arguments, _native


class range(contextlib.ContextDecorator):  # noqa: A001 - torch.cuda.nvtx.range's name
    """A named range: `with memtrail.range("forward"):`, or `@memtrail.range("step")` on a
    function. Nested ranges nest; each one starts and ends in the history."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __enter__(self) -> "range":
        _native.check(_native.started().memtrail_range_start(
            _arguments.text("range", "name", self.name)))
        return self

    def __exit__(self, kind: Optional[type[BaseException]], value: Optional[BaseException],
                 traceback: Optional[TracebackType]) -> None:
        _native.check(_native.started().memtrail_range_end(
            _arguments.text("range", "name", self.name)))


def range_start(name: str) -> None:
    """Starts a range that range_end(name) ends (for code that cannot use `with`)."""
    encoded = _arguments.text("range_start", "name", name)
    _native.check(_native.started().memtrail_range_start(encoded))


def range_end(name: str) -> None:
    encoded = _arguments.text("range_end", "name", name)
    _native.check(_native.started().memtrail_range_end(encoded))


def marker(name: str) -> None:
    """A point in the history: an epoch's end, a checkpoint."""
    encoded = _arguments.text("marker", "name", name)
    _native.check(_native.started().memtrail_marker(encoded))


def set_thread_metadata(metadata: Optional[str]) -> None:
    """Copied into every event the calling thread records from now on (a training step, a
    phase); None or "" for none."""
    _native.check(_native.started().memtrail_set_thread_metadata(
        _arguments.text("set_thread_metadata", "metadata", metadata or "")))
