"""bench_table.py reads aggregate rates as Google Benchmark counts them.

With several threads, Google Benchmark reports as an operation's time the wall time over the
operations of all threads together (its items_per_second is the inverse). The table once took the
time as per thread and multiplied by the thread count, which read
8 threads' 1.5 M pairs a second as 12 M. The entries below are the shape bench_side_by_side's
--benchmark_out writes (values from an H100 host, 2026-11-24).

    python3 tests/gpu/bench_table_test.py
"""
import contextlib, io, json, os, sys, tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_table


def entry(name, threads, real_time, items_per_second):
    return {"name": f"{name}/real_time/threads:{threads}_median",
            "run_name": f"{name}/real_time/threads:{threads}", "run_type": "aggregate",
            "aggregate_name": "median", "threads": threads, "real_time": real_time,
            "cpu_time": real_time * threads, "time_unit": "ns", "items_per_second": items_per_second}


def main():
    data = {"context": {"date": "2026-11-24T17:26:32+00:00", "host_name": "h100"},
            "benchmarks": [entry("pair/memtrail/512", 1, 119.0, 8.36897e6),
                           entry("pair/memtrail/512", 8, 261.0, 3.8276e6),
                           entry("pair/torch/512", 8, 3348.0, 298.668e3)]}
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "bench.json")
        with open(path, "w") as f:
            json.dump(data, f)
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            bench_table.main(path)
    row = next(line for line in printed.getvalue().splitlines() if line.startswith("| 8 threads,"))
    expected = "| 8 threads, aggregate pairs of 512 B per second | 3.8 M/s (1 thread: 8.4 M/s) | 0.3 M/s |"
    if not row.startswith(expected):
        sys.exit(f"bench_table_test: the 8-thread row reads\n  {row}\nexpected it to start with\n  {expected}")
    print("bench_table_test: aggregate rates as Google Benchmark counts them")


if __name__ == "__main__":
    main()
