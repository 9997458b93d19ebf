"""Recording's cost per allocation in the shape of PyTorch training, on the simulated device:
librecorder's memtrail_malloc and memtrail_free called through ctypes (CDLL releases the GIL
around each call, as PyTorch's bindings do) from a Python program about 30 frames deep with
several call sites (a framework's outer frames, then a model's layers and operators), and from a
native thread that has a Python thread state but no Python frames and never holds the GIL
(autograd's worker: bench/stacks/native_worker.cpp).

Each process records in one mode: off, production (context alloc, stacks all: every
allocation's Python and native stack, frees without) or all (context all, stacks all), and
measures ns per allocation and its free (the median malloc call plus the median free call, each
timed alone: robust on a loaded machine) on the main thread alone, on the worker alone, on both
at once, and on the main thread with its caches evicted before each operator, as PyTorch's own
work between allocations does. LIBRECORDER may be
several libraries, comma-separated (builds before and after a change): processes of every
library and mode alternate, ROUNDS of each, and the medians are printed, with the cost counters'
summary of the last process of each when a library was built with -DMEMTRAIL_COST_COUNTERS=ON
(COSTS_PREFIX: its MEMTRAIL_COST_COUNTERS_FILE).

Usage: python3 production_bench.py LIBRECORDER WORKER_LIBRARY [ROUNDS] [STEPS] [COSTS_PREFIX]
       (bench/stacks/production_bench.sh BUILD builds both and runs it)"""

import ctypes
import os
import statistics
import subprocess
import sys
import time

MODES = {"off": None, "production": b"alloc", "all": b"all"}  # mode: memtrail's context
OUTER_FRAMES = 22  # runpy, the script, a trainer, hooks, Module.__call__ and the like
LAYERS = 6
WORKER_SECONDS = 0.3
EVICTED_BYTES = 2 << 20  # an H200 host's L2 a core


def outer_frames(count):
    """`count` distinct functions, each calling the next; the last calls its argument."""
    source = "".join(f"def outer_{i}(body):\n    return outer_{i + 1}(body)\n" for i in range(count))
    source += f"def outer_{count}(body):\n    return body()\n"
    scope = {}
    exec(compile(source, "framework.py", "exec"), scope)
    return scope["outer_0"]


class model:
    """A transformer's forward pass: per layer, attention and MLP operators, each allocating its
    output at its own line; activations kept to the step's end, temporaries freed at once. Each
    call into librecorder is timed by itself: the median call, not the mean, so that a process
    descheduled on a loaded machine does not weigh (Python's clock costs the same in every mode).
    `evict`, if given, runs before each operator."""

    def __init__(self, malloc, free, evict=None):
        self.malloc, self.free, self.evict = malloc, free, evict
        self.kept = []
        self.malloc_ns = []
        self.free_ns = []

    def tensor(self, size):
        if self.evict is not None:
            self.evict()
        start = time.perf_counter_ns()
        pointer = self.malloc(size, 0, None)
        self.malloc_ns.append(time.perf_counter_ns() - start)
        return (pointer, size)

    def release(self, tensor):
        start = time.perf_counter_ns()
        self.free(tensor[0], tensor[1], 0, None)
        self.free_ns.append(time.perf_counter_ns() - start)

    def linear(self, size):
        output = self.tensor(size)
        self.kept.append(output)
        return output

    def softmax(self, size):
        scores = self.tensor(size)
        self.release(scores)
        return self.tensor(size)

    def attention(self, width):
        query = self.linear(width)
        key = self.linear(width)
        value = self.linear(width)
        probabilities = self.softmax(4 * width)
        self.kept.append(probabilities)
        return self.linear(width), (query, key, value)

    def mlp(self, width):
        hidden = self.tensor(4 * width)
        activated = self.tensor(4 * width)
        self.release(hidden)
        self.kept.append(activated)
        return self.linear(width)

    def block(self, width):
        self.attention(width)
        return self.mlp(width)

    def forward(self):
        for layer in range(LAYERS):
            self.block((1 << 20) + layer * 4096)

    def step(self):
        self.forward()
        for tensor in reversed(self.kept):
            self.release(tensor)
        self.kept.clear()


def run_steps(network, steps):
    """The median malloc call plus the median free call (ns) over `steps` training steps, run
    under the framework's outer frames."""

    def body():
        network.malloc_ns.clear()
        network.free_ns.clear()
        for _ in range(steps):
            network.step()
        return statistics.median(network.malloc_ns) + statistics.median(network.free_ns)

    return outer_frames(OUTER_FRAMES)(body)


def cache_evictor(evicted_bytes):
    """Other work that evicts a core's cache, as PyTorch's dispatch and kernel launches do
    between two allocations."""
    source = ctypes.create_string_buffer(evicted_bytes)
    target = ctypes.create_string_buffer(evicted_bytes)
    return lambda: ctypes.memmove(target, source, evicted_bytes)


def measure(library_path, worker_path, context, steps):
    library = ctypes.CDLL(library_path)
    library.memtrail_malloc.restype = ctypes.c_void_p
    library.memtrail_malloc.argtypes = [ctypes.c_ssize_t, ctypes.c_int, ctypes.c_void_p]
    library.memtrail_free.argtypes = [ctypes.c_void_p, ctypes.c_ssize_t, ctypes.c_int,
                                      ctypes.c_void_p]
    library.memtrail_record_memory_history.argtypes = [
        ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_size_t]
    worker = ctypes.CDLL(worker_path)
    worker.memtrail_bench_worker_start.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int]
    worker.memtrail_bench_worker_stop.restype = ctypes.c_double
    if context is not None:
        assert library.memtrail_record_memory_history(b"all", context, b"all", 0) == 0
    malloc_address = ctypes.cast(library.memtrail_malloc, ctypes.c_void_p).value
    free_address = ctypes.cast(library.memtrail_free, ctypes.c_void_p).value
    network = model(library.memtrail_malloc, library.memtrail_free)

    run_steps(network, max(1, steps // 10))  # warm: stacks interned, code objects kept
    main_alone = run_steps(network, steps)
    assert worker.memtrail_bench_worker_start(malloc_address, free_address, 1) == 0
    time.sleep(WORKER_SECONDS)
    worker_alone = worker.memtrail_bench_worker_stop()
    assert worker.memtrail_bench_worker_start(malloc_address, free_address, 1) == 0
    main_beside = run_steps(network, steps)
    worker_beside = worker.memtrail_bench_worker_stop()
    network.evict = cache_evictor(EVICTED_BYTES)
    main_cold = run_steps(network, max(1, steps // 10))
    return [main_alone, worker_alone, main_beside, worker_beside, main_cold]


COLUMNS = ["main alone", "worker alone", "main beside worker", "worker beside main",
           "main, cold caches"]


def cost_summary(prefix, pid):
    path = f"{prefix}.{pid}"
    if not prefix or not os.path.exists(path):
        return None
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
    from cost_counters_summary import summary
    text = summary(path)
    os.remove(path)
    return text


def main(libraries, worker_path, rounds, steps, costs_prefix):
    """Every library in every mode, ROUNDS times, alternating (each round starting one later)."""
    configurations = [(library, mode) for library in libraries for mode in MODES]
    results = {configuration: [] for configuration in configurations}
    costs = {}
    environment = dict(os.environ, MEMTRAIL_DEVICE="sim:8GiB")
    for index in range(rounds):
        shift = index % len(configurations)
        for library, mode in configurations[shift:] + configurations[:shift]:
            child = subprocess.Popen([sys.executable, __file__, "--child", library, worker_path,
                                      mode, str(steps)], env=environment,
                                     stdout=subprocess.PIPE, text=True)
            output, _ = child.communicate()
            if child.returncode != 0:
                sys.exit(f"production_bench: the {mode} process of {library} failed "
                         f"({child.returncode})")
            results[(library, mode)].append([float(value) for value in output.split()])
            costs[(library, mode)] = (cost_summary(costs_prefix, child.pid)
                                      or costs.get((library, mode)))
    print("ns per allocation and its free (the median calls of each process), medians of "
          f"{rounds} processes (min-max):")
    for library in libraries:
        print(library)
        print(f"{'mode':11}" + "".join(f"{column:>22}" for column in COLUMNS))
        for mode in MODES:
            runs = results[(library, mode)]
            cells = []
            for column in range(len(COLUMNS)):
                values = [run[column] for run in runs]
                cells.append(f"{statistics.median(values):7.0f} ({min(values):.0f}-{max(values):.0f})")
            print(f"{mode:11}" + "".join(f"{cell:>22}" for cell in cells))
    for (library, mode), text in costs.items():
        if text:
            print(f"cost counters, {library}, {mode}: {text}")


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        _, _, library_path, worker_path, mode, steps = sys.argv
        print(*measure(library_path, worker_path, MODES[mode], int(steps)))
    elif len(sys.argv) < 3:
        sys.exit(__doc__)
    else:
        main(sys.argv[1].split(","), sys.argv[2], int(sys.argv[3]) if len(sys.argv) > 3 else 5,
             int(sys.argv[4]) if len(sys.argv) > 4 else 400,
             sys.argv[5] if len(sys.argv) > 5 else "")
