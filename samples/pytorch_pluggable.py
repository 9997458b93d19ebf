"""pytorch_pluggable: run PyTorch on memtrail's allocator and dump a snapshot.

PyTorch can hand all its CUDA allocations to another allocator through
torch.cuda.memory.CUDAPluggableAllocator, which loads two C functions from a shared library.
librecorder.so exports exactly those (memtrail_malloc, memtrail_free), so PyTorch's tensors
come from memtrail's caching allocator (same rules as PyTorch's own), and memtrail records
their history with native stacks.

Needs a GPU, PyTorch and a librecorder built with CUDA:

    python3 samples/pytorch_pluggable.py build/lib/librecorder.so snapshot.memtrail

The allocator must be switched before PyTorch allocates anything on the GPU.

CUDA graphs (torch.cuda.graph) need libmemtrail_torch_bridge.so beside librecorder.so, when it
was built (against libtorch, see docs/recorder.md): it tells memtrail which allocations belong to
a graph's private pool. torch.compile(mode="reduce-overhead") cannot run on any pluggable
allocator: PyTorch refuses it itself, and explain_pluggable_error says why and what to do.
"""

import ctypes
import os
import sys

import torch


def install_torch_bridge(library: str) -> bool:
    """Loads libmemtrail_torch_bridge.so from librecorder's folder, if it is there, and hands
    PyTorch's graph-capture and pool hooks to memtrail. Returns whether it did."""
    path = os.path.join(os.path.dirname(os.path.abspath(library)), "libmemtrail_torch_bridge.so")
    if not os.path.exists(path):
        return False
    bridge = ctypes.CDLL(path)
    bridge.memtrail_torch_bridge_error.restype = ctypes.c_char_p
    if bridge.memtrail_torch_bridge_install() != 0:
        raise RuntimeError(bridge.memtrail_torch_bridge_error().decode())
    return True


def explain_pluggable_error(error: Exception) -> Exception:
    """The error to show for one PyTorch raised on memtrail: its own, unless it is the refusal of
    CUDA graph trees, which gets the reason and the ways around it."""
    if "checkPoolLiveAllocations" not in str(error):
        return error
    return RuntimeError(
        "torch.compile(mode=\"reduce-overhead\") does not run on memtrail: its CUDA graph trees ask "
        "the allocator which blocks of a graph's pool are live (checkPoolLiveAllocations), and "
        "PyTorch's CUDAPluggableAllocator, through which memtrail serves PyTorch, does not offer "
        "that call to any allocator. Compile with mode=\"default\" or "
        "\"max-autotune-no-cudagraphs\", capture with torch.cuda.graph (memtrail supports it "
        "with libmemtrail_torch_bridge.so), or record this model with PyTorch's own allocator "
        "(torch.cuda.memory._record_memory_history) and open that snapshot with memtrail. "
        f"PyTorch said: {error}")


def main(library: str, output: str) -> None:
    allocator = torch.cuda.memory.CUDAPluggableAllocator(library, "memtrail_malloc", "memtrail_free")
    torch.cuda.memory.change_current_allocator(allocator)
    install_torch_bridge(library)

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
    try:
        for step in range(3):
            check(memtrail.memtrail_range_start(f"step {step}".encode()))
            loss = model(torch.randn(256, 1024, device="cuda")).square().mean()
            loss.backward()
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
            check(memtrail.memtrail_range_end(f"step {step}".encode()))
        torch.cuda.synchronize()
    except RuntimeError as error:
        # A model compiled with mode="reduce-overhead" stops here, with PyTorch's own words.
        raise explain_pluggable_error(error) from error

    check(memtrail.memtrail_dump_snapshot(output.encode()))
    print(f"snapshot written to {output}")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(f"usage: {sys.argv[0]} path/to/librecorder.so output.memtrail")
    main(sys.argv[1], sys.argv[2])
