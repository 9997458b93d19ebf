"""memtrail as PyTorch's CUDA allocator, through torch.cuda.memory.CUDAPluggableAllocator: every
CUDA tensor then comes from memtrail's caching allocator (PyTorch's rules), and memtrail's API
(memory_stats(), record_memory_history(), dump_snapshot(), ...) answers for it.

    import memtrail
    memtrail.torch.use()          # before the first CUDA tensor

PyTorch is imported only when use() is called."""

from __future__ import annotations

import sys
import threading
from typing import Optional

from . import _native
from .errors import AllocatorSwitchError, BadArgumentError
from .history import record_memory_history
from .memory import set_allocator_config

_lock = threading.Lock()
_in_use = False


def _what_started_cuda(torch: object) -> str:
    """What can be told about who started CUDA: PyTorch's own allocator, and other CUDA
    frameworks already imported."""
    facts = []
    cuda = getattr(torch, "cuda")
    try:
        held = cuda.memory_allocated()
        facts.append(f"PyTorch's allocator ({cuda.get_allocator_backend()}) holds {held} bytes")
    except Exception:  # an allocator that keeps no statistics: nothing more to say
        pass
    others = [name for name in ("cupy", "numba", "jax", "tensorflow", "pycuda") if name in sys.modules]
    if others:
        facts.append("also imported: " + ", ".join(others))
    return "; ".join(facts)


def use(config: Optional[str] = None, mode: Optional[str] = None) -> None:
    """Makes memtrail PyTorch's CUDA allocator, with allocator settings `config` if given
    (PYTORCH_CUDA_ALLOC_CONF's syntax; else MEMTRAIL_ALLOC_CONF's, PYTORCH_ALLOC_CONF's or
    PYTORCH_CUDA_ALLOC_CONF's, docs/settings.md). mode="production" also starts recording as
    the mode to leave on does: every event, the Python and native stack of every allocation,
    frees without stacks (PyTorch's context "alloc"), the trace bounded (docs/production.md).
    Calling it again does nothing. Raises AllocatorSwitchError when CUDA has started in this
    process already (PyTorch cannot change its allocator then), BadArgumentError for another
    mode, ImportError without PyTorch."""
    global _in_use
    if mode not in (None, "production"):
        raise BadArgumentError(f"memtrail.torch.use: mode={mode!r} is not a recording mode; "
                               "accepted: None (recording as set elsewhere) or \"production\"")
    import torch

    with _lock:
        if _in_use:
            return
        if torch.cuda.is_initialized():
            facts = _what_started_cuda(torch)
            raise AllocatorSwitchError(
                "memtrail: CUDA has started in this process already, so PyTorch keeps its own "
                "allocator" + (f" ({facts})" if facts else "") + ": call memtrail.torch.use() "
                "before anything touches CUDA (the first .cuda(), torch.cuda.* call or CUDA "
                "tensor), or start the program under `memtrail run`")
        if config is not None:
            set_allocator_config(config)
        _native.started()
        allocator = torch.cuda.memory.CUDAPluggableAllocator(
            str(_native.library_path()), "memtrail_malloc", "memtrail_free")
        torch.cuda.memory.change_current_allocator(allocator)
        _in_use = True
        if mode == "production":
            record_memory_history("all", context="alloc", stacks="all")


def in_use() -> bool:
    """Whether use() made memtrail PyTorch's allocator."""
    return _in_use
