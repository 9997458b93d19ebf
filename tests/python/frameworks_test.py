"""memtrail.torch.use() and memtrail.cupy.use() against stand-ins for PyTorch's and CuPy's
allocator hooks (neither framework is installed here; tests/gpu/python_package.py runs the real
ones): what the package hands them, and the refusal once CUDA has started.
Run by ctest with MEMTRAIL_DEVICE=sim:2GiB, MEMTRAIL_LIBRARY and PYTHONPATH set."""

import ctypes
import gc
import sys
import types
import unittest

import memtrail

MiB = 1 << 20


def fake_torch(cuda_started: bool) -> types.ModuleType:
    """torch.cuda's allocator hooks, recording what they are given."""
    torch = types.ModuleType("torch")
    cuda = types.ModuleType("torch.cuda")
    memory = types.ModuleType("torch.cuda.memory")
    torch.cuda = cuda
    cuda.memory = memory
    cuda.is_initialized = lambda: cuda_started
    cuda.current_device = lambda: 0
    cuda.memory_allocated = lambda: 4096
    cuda.get_allocator_backend = lambda: "native"
    memory.installed = []

    class CUDAPluggableAllocator:
        def __init__(self, path: str, alloc_name: str, free_name: str) -> None:
            self.path, self.alloc_name, self.free_name = path, alloc_name, free_name

    memory.CUDAPluggableAllocator = CUDAPluggableAllocator
    memory.change_current_allocator = memory.installed.append
    return torch


def fake_cupy() -> types.ModuleType:
    """cupy.cuda's allocator hook and memory classes, as far as an external allocator uses them."""
    cupy = types.ModuleType("cupy")
    cuda = types.ModuleType("cupy.cuda")
    cupy.cuda = cuda
    cuda.allocator = None
    cuda.Device = lambda: types.SimpleNamespace(id=0)
    cuda.get_current_stream = lambda: types.SimpleNamespace(ptr=0x77)

    class UnownedMemory:
        def __init__(self, ptr: int, size: int, owner: object, device_id: int) -> None:
            self.ptr, self.size, self.owner, self.device_id = ptr, size, owner, device_id

    class MemoryPointer:
        def __init__(self, mem: UnownedMemory, offset: int) -> None:
            self.mem, self.ptr = mem, mem.ptr + offset

    def set_allocator(allocator: object) -> None:
        cuda.allocator = allocator

    cuda.UnownedMemory, cuda.MemoryPointer, cuda.set_allocator = UnownedMemory, MemoryPointer, set_allocator
    return cupy


class TorchTest(unittest.TestCase):
    def tearDown(self) -> None:
        sys.modules.pop("torch", None)

    def test_refuses_once_cuda_has_started_else_hands_over_librecorder(self) -> None:
        sys.modules["torch"] = fake_torch(cuda_started=True)
        with self.assertRaises(memtrail.AllocatorSwitchError) as context:
            memtrail.torch.use()
        self.assertIsInstance(context.exception, memtrail.MemtrailError)
        self.assertIn("CUDA has started in this process already", str(context.exception))
        self.assertIn("PyTorch's allocator (native) holds 4096 bytes", str(context.exception))
        self.assertEqual(sys.modules["torch"].cuda.memory.installed, [])
        self.assertFalse(memtrail.torch.in_use())

        # Before CUDA starts, PyTorch gets librecorder's allocation functions (one process can
        # switch only once, so both cases are one test).
        torch = fake_torch(cuda_started=False)
        sys.modules["torch"] = torch
        with self.assertRaises(memtrail.BadArgumentError):
            memtrail.torch.use(mode="everything")
        self.assertEqual(torch.cuda.memory.installed, [])
        memtrail.torch.use(config="expandable_segments:False", mode="production")
        memtrail.torch.use()  # a second call changes nothing
        [allocator] = torch.cuda.memory.installed
        self.assertEqual((allocator.alloc_name, allocator.free_name), ("memtrail_malloc", "memtrail_free"))
        library = ctypes.CDLL(allocator.path)
        self.assertTrue(hasattr(library, allocator.alloc_name) and hasattr(library, allocator.free_name))
        self.assertTrue(memtrail.torch.in_use())
        # Production: every event, allocations with their stacks, frees without.
        block = memtrail.caching_allocator_alloc(3 * MiB)
        memtrail.caching_allocator_delete(block)
        trace = memtrail._snapshot()["device_traces"][0]
        alloc = [e for e in trace if e["action"] == "alloc" and e["addr"] == block][-1]
        free = [e for e in trace if e["action"] in ("free_requested", "free_completed")
                and e["addr"] == block]
        self.assertTrue(alloc["frames"])
        self.assertTrue(free)
        self.assertTrue(all(not e["frames"] for e in free), free)


class CupyTest(unittest.TestCase):
    def test_cupys_arrays_come_from_memtrail(self) -> None:
        cupy = fake_cupy()
        sys.modules["cupy"] = cupy
        try:
            memtrail.cupy.use()
            before = memtrail.memory_allocated()
            pointer = cupy.cuda.allocator(3 * MiB)
            self.assertEqual(memtrail.memory_allocated(), before + 3 * MiB)
            self.assertEqual(pointer.ptr, pointer.mem.ptr)
            self.assertEqual(pointer.mem.size, 3 * MiB)
            del pointer
            gc.collect()
            self.assertEqual(memtrail.memory_allocated(), before)
        finally:
            sys.modules.pop("cupy", None)


if __name__ == "__main__":
    unittest.main(verbosity=2)
