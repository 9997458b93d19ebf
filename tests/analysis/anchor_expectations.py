#!/usr/bin/env python3
"""Expected numbers for a PyTorch snapshot pickle, computed straight from its segment list
(and the torch.cuda.memory_stats() saved beside it), without torch and without memtrail.

Prints one line per segment and one per statistic:
  segment ADDRESS TOTAL ALLOCATED PENDING FREE LARGEST_FREE REQUESTED BLOCKS
  stat NAME VALUE
"""
import json
import pathlib
import pickle
import sys


def main(path):
    with open(path, "rb") as f:
        data = pickle.load(f)
    for seg in sorted(data["segments"], key=lambda s: (s["device"], s["address"])):
        allocated = pending = free = largest_free = requested = 0
        for block in seg["blocks"]:
            if block["state"] == "active_allocated":
                allocated += block["size"]
                requested += block["requested_size"]
            elif block["state"] == "active_pending_free":
                pending += block["size"]
                requested += block["requested_size"]
            else:
                free += block["size"]
                largest_free = max(largest_free, block["size"])
        print("segment", seg["address"], seg["total_size"], allocated, pending, free,
              largest_free, requested, len(seg["blocks"]))
    stats_path = pathlib.Path(path).with_suffix(".json")
    if stats_path.exists():
        for name, value in sorted(json.loads(stats_path.read_text())["stats"].items()):
            print("stat", name, value)


if __name__ == "__main__":
    main(sys.argv[1])
