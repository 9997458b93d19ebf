"""lock_table.py on two made-up candidates: the rates, ns a pair and ratios to PyTorch."""
import json, os, sys, tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import lock_table


def result(memtrail_off, pytorch_off, with_pytorch=True):
    rows = [{"allocator": "memtrail", "recording": "off", "threads": t,
             "median_pairs_per_second": memtrail_off * t, "pairs_per_second": []} for t in (1, 8)]
    rows += [{"allocator": "memtrail", "recording": "on", "threads": 1,
              "median_pairs_per_second": 2e6, "pairs_per_second": []}]
    rows += [{"allocator": "bare", "recording": "off", "threads": t,
              "median_pairs_per_second": 3 * memtrail_off * t, "pairs_per_second": []}
             for t in (1, 8)]
    if with_pytorch:
        rows += [{"allocator": "pytorch", "recording": "off", "threads": t,
                  "median_pairs_per_second": pytorch_off, "pairs_per_second": []} for t in (1, 8)]
    return {"benchmark": "lock_decision", "pair_size": 512, "seconds": 0.2, "repetitions": 5,
            "bare_device": "sim", "rows": rows}


with tempfile.TemporaryDirectory() as folder:
    paths = []
    for name, data in (("combining", result(10e6, 2e6)), ("spinning", result(5e6, 1e6, False))):
        path = os.path.join(folder, name + ".json")
        with open(path, "w") as f:
            json.dump(data, f)
        paths.append((name, path))
    text = lock_table.table(paths)
lines = text.splitlines()
assert "medians of 5 runs of 0.2 s" in lines[0], lines[0]
assert "same kind of device (sim)" in lines[0], lines[0]
assert "| combining | off | 1 | 10.000 | 100 | 30.000 | 2.000 | 5.00x |" in lines, text
assert "| combining | off | 8 | 80.000 |  | 240.000 | 2.000 | 40.00x |" in lines, text
assert "| combining | on | 1 | 2.000 | 500 | - | - | - |" in lines, text
assert "| spinning | off | 8 | 40.000 |  | 120.000 | - | - |" in lines, text
print("lock_table: ok")
