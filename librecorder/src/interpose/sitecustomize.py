"""memtrail run's hook into Python: `memtrail run python train.py` puts this folder first on
PYTHONPATH, so Python runs it at start-up, before the script.

In --mode cache it makes PyTorch allocate from memtrail's caching allocator: when the script
imports torch, right after torch has loaded and before anything can touch CUDA, it swaps in
librecorder's memtrail_malloc/memtrail_free through torch.cuda.memory.CUDAPluggableAllocator. In
--mode observe PyTorch keeps its own allocator, whose cudaMalloc calls the interposer records.
Either way it writes the snapshot from Python's exit handlers, while Python can still name its
frames (and the interposer writes it on SIGTERM and os._exit, which skip those handlers). It never changes what the script does: a failure here prints "memtrail: ..." and the
script goes on. Another sitecustomize that this one shadows is run after it.
"""

import atexit
import ctypes
import importlib.abc
import importlib.machinery
import importlib.util
import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))
# Built and installed side by side: lib/memtrail/python/sitecustomize.py, lib/librecorder.so.
_LIBRARY_DIR = os.path.dirname(os.path.dirname(_HERE))
_LIBRECORDER = os.path.join(_LIBRARY_DIR, "librecorder.so")
_INTERPOSER = os.path.join(_LIBRARY_DIR, "libmemtrail_interpose.so")


def _warn(what, error):
    print(f"memtrail: {what}: {error}", file=sys.stderr)


_pytorch_on_memtrail = False


def _use_memtrail_allocator(torch):
    global _pytorch_on_memtrail
    try:
        allocator = torch.cuda.memory.CUDAPluggableAllocator(
            _LIBRECORDER, "memtrail_malloc", "memtrail_free")
        torch.cuda.memory.change_current_allocator(allocator)
        _pytorch_on_memtrail = True
    except Exception as error:  # the script runs on, with PyTorch's own allocator
        _warn("PyTorch keeps its own allocator", error)
        return
    try:  # the snapshot is then also written on SIGTERM and os._exit
        ctypes.CDLL(_INTERPOSER).memtrail_interpose_pytorch_on_memtrail()
    except (OSError, AttributeError) as error:
        _warn("no snapshot on SIGTERM or os._exit", error)


class _AfterTorchLoads(importlib.abc.Loader):
    """torch's own loader, then the allocator swap."""

    def __init__(self, loader):
        self._loader = loader

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module):
        self._loader.exec_module(module)
        _use_memtrail_allocator(module)


class _TorchImportHook(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name != "torch":
            return None
        sys.meta_path.remove(self)
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is not None and spec.loader is not None:
            spec.loader = _AfterTorchLoads(spec.loader)
        return spec


def _dump_at_exit():
    try:
        ctypes.CDLL(_INTERPOSER).memtrail_interpose_exit_dump(int(_pytorch_on_memtrail))
    except OSError as error:
        _warn("no snapshot at exit", error)


def _run_shadowed_sitecustomize():
    others = [entry for entry in sys.path if os.path.abspath(entry or ".") != _HERE]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", others)
    if spec is not None and spec.loader is not None:
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)


if os.environ.get("MEMTRAIL_MODE", "cache") == "cache":
    sys.meta_path.insert(0, _TorchImportHook())
atexit.register(_dump_at_exit)
try:
    _run_shadowed_sitecustomize()
except Exception as error:
    _warn("the program's own sitecustomize failed", error)
