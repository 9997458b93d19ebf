"""ns per alloc+free pair through librecorder's C API, called by ctypes (CDLL releases the GIL
around each call, as PyTorch's bindings do) from a Python function 20 frames deep (a new frame
for each pair, the 19 around it the same), recording context all, for each way of reading Python
frames (MEMTRAIL_PYTHON_FRAMES) and stacks python and all, and without recording (the cost of
ctypes and the allocator alone). Each configuration runs in its own process, alternating, ROUNDS
times; prints the medians.

Usage: python3 python_stacks_bench.py LIBRECORDER [ROUNDS] [PAIRS]"""

import ctypes
import os
import statistics
import subprocess
import sys
import time

DEPTH = 20


def measure(library_path: str, stacks: str, pairs: int) -> float:
    library = ctypes.CDLL(library_path)
    library.memtrail_malloc.restype = ctypes.c_void_p
    library.memtrail_malloc.argtypes = [ctypes.c_ssize_t, ctypes.c_int, ctypes.c_void_p]
    library.memtrail_free.argtypes = [ctypes.c_void_p, ctypes.c_ssize_t, ctypes.c_int,
                                      ctypes.c_void_p]
    library.memtrail_record_memory_history.argtypes = [
        ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_size_t]
    if stacks != "off":
        assert library.memtrail_record_memory_history(b"all", b"all", stacks.encode(), 0) == 0
    malloc, free = library.memtrail_malloc, library.memtrail_free

    def pair() -> None:
        pointer = malloc(1 << 20, 0, None)
        free(pointer, 1 << 20, 0, None)

    def loop(count: int) -> None:
        for _ in range(count):
            pair()

    def at_depth(depth: int, count: int) -> float:
        if depth > 0:
            return at_depth(depth - 1, count)
        loop(count // 10)  # warm: stacks interned, code objects kept
        start = time.perf_counter_ns()
        loop(count)
        return (time.perf_counter_ns() - start) / count

    return at_depth(DEPTH, pairs)


def main(library_path: str, rounds: int, pairs: int) -> None:
    configurations = [("api", "off")] + [(source, stacks) for stacks in ("python", "all")
                                         for source in ("api", "direct")]
    results = {configuration: [] for configuration in configurations}
    for _ in range(rounds):
        for source, stacks in configurations:
            environment = dict(os.environ, MEMTRAIL_DEVICE="sim:2GiB",
                               MEMTRAIL_PYTHON_FRAMES=source)
            output = subprocess.run([sys.executable, __file__, "--child", library_path, stacks,
                                     str(pairs)], env=environment, check=True,
                                    capture_output=True, text=True).stdout
            results[(source, stacks)].append(float(output))
    for (source, stacks), values in results.items():
        print(f"stacks={stacks:6} frames={source:6} median {statistics.median(values):8.0f} ns "
              f"per pair (min {min(values):.0f}, max {max(values):.0f}, {len(values)} runs)")


if __name__ == "__main__":
    if sys.argv[1] == "--child":
        print(measure(sys.argv[2], sys.argv[3], int(sys.argv[4])))
    else:
        main(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 5,
             int(sys.argv[3]) if len(sys.argv) > 3 else 20000)
