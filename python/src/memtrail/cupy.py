"""memtrail as CuPy's allocator (cupy.cuda.set_allocator): CuPy's arrays then come from
memtrail's caching allocator too, beside PyTorch's, and show in the same history.

    import memtrail
    memtrail.cupy.use()

CuPy is imported only when use() is called."""

from __future__ import annotations

import threading
from typing import Any

from .memory import caching_allocator_alloc, caching_allocator_delete

_lock = threading.Lock()
_in_use = False


class _Block:
    """Owns one memtrail block for CuPy: freed when CuPy drops its last reference."""

    __slots__ = ("address",)

    def __init__(self, address: int) -> None:
        self.address = address

    def __del__(self) -> None:
        caching_allocator_delete(self.address)


def _allocate(size: int) -> Any:
    import cupy

    device = cupy.cuda.Device().id
    stream = cupy.cuda.get_current_stream().ptr
    block = _Block(caching_allocator_alloc(size, device, stream))
    memory = cupy.cuda.UnownedMemory(block.address, size, block, device)
    return cupy.cuda.MemoryPointer(memory, 0)


def use() -> None:
    """Makes memtrail CuPy's allocator (on every device). Calling it again does nothing.
    Raises ImportError without CuPy."""
    global _in_use
    import cupy

    with _lock:
        if not _in_use:
            cupy.cuda.set_allocator(_allocate)
            _in_use = True


def in_use() -> bool:
    """Whether use() made memtrail CuPy's allocator."""
    return _in_use
