"""pytorch_pluggable: run PyTorch on memtrail's allocator and dump a snapshot.

PyTorch can hand all its CUDA allocations to another allocator through
torch.cuda.memory.CUDAPluggableAllocator, which loads two C functions from a shared library.
librecorder.so exports exactly those (memtrail_malloc, memtrail_free), so PyTorch's tensors
come from memtrail's caching allocator (same rules as PyTorch's own), and memtrail records
their history with native stacks.

Needs a GPU, PyTorch and a librecorder built with CUDA:

    python3 samples/pytorch_pluggable.py build/lib/librecorder.so snapshot.memtrail

The allocator must be switched before PyTorch allocates anything on the GPU.
"""

import ctypes
import sys

import torch


def main(library: str, output: str) -> None:
    allocator = torch.cuda.memory.CUDAPluggableAllocator(library, "memtrail_malloc", "memtrail_free")
    torch.cuda.memory.change_current_allocator(allocator)

    # The rest of librecorder's C API (memtrail.h) through ctypes: history and snapshots.
    memtrail = ctypes.CDLL(library)
    memtrail.memtrail_record_memory_history.argtypes = [
        ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_size_t]
    memtrail.memtrail_dump_snapshot.argtypes = [ctypes.c_char_p]
    memtrail.memtrail_range_start.argtypes = [ctypes.c_char_p]
    memtrail.memtrail_range_end.argtypes = [ctypes.c_char_p]
    memtrail.memtrail_last_error.restype = ctypes.c_char_p

    def check(status: int) -> None:
        if status != 0:
            raise RuntimeError(memtrail.memtrail_last_error().decode())

    check(memtrail.memtrail_record_memory_history(b"all", b"all", b"native", 100_000))

    model = torch.nn.Sequential(
        torch.nn.Linear(1024, 4096), torch.nn.ReLU(), torch.nn.Linear(4096, 1024)).cuda()
    optimizer = torch.optim.Adam(model.parameters())
    for step in range(3):
        check(memtrail.memtrail_range_start(f"step {step}".encode()))
        loss = model(torch.randn(256, 1024, device="cuda")).square().mean()
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        check(memtrail.memtrail_range_end(f"step {step}".encode()))
    torch.cuda.synchronize()

    check(memtrail.memtrail_dump_snapshot(output.encode()))
    print(f"snapshot written to {output}")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(f"usage: {sys.argv[0]} path/to/librecorder.so output.memtrail")
    main(sys.argv[1], sys.argv[2])
