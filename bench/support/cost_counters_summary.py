"""Nanoseconds per event in each part of recording, from the files that a build with
-DMEMTRAIL_COST_COUNTERS=ON writes at exit (<MEMTRAIL_COST_COUNTERS_FILE>.<pid>; bench/README.md):

    python3 bench/support/cost_counters_summary.py /tmp/memtrail_costs.*

One line per file: every timed part's ticks turned into ns and divided by the events that
captured a context; the walk's frames (written, stepped, taken from the kept walk) per walk; and
how walks met their kept walks: found with their innermost frame, or whole.
"""
import sys

TIMED = ["capture_context", "native", "choose", "loop", "keep", "intern_native", "py_ctor",
         "py_read", "py_find", "py_slow", "clock", "on_event", "push", "alloc_total", "free_total"]


def summary(path):
    with open(path) as f:
        values = dict(line.split() for line in f if line.strip())
    ns_per_tick = float(values.pop("ns_per_tick"))
    counts = {name: int(value) for name, value in values.items()}
    events = counts.get("events_ctx", 0)
    if events == 0:
        return f"{path}: no event captured a context"
    parts = [f"{name} {ns_per_tick * counts[name] / events:.0f}" for name in TIMED if name in counts]
    walks = counts.get("walks", 0)
    frames = ""
    if walks:
        frames = (f"; per walk: {counts['native_frames'] / walks:.1f} frames written, "
                  f"{counts['fresh'] / walks:.1f} stepped, {counts['shared'] / walks:.1f} kept"
                  f"; walks {walks}: innermost frame kept {counts['choose_hit']}, "
                  f"whole {counts['walk_whole']}, deeper than kept {counts['fallback']}")
    python = ""
    if "py_cached" in counts:
        python = (f"; stacks taken from the kept walk: {counts.get('whole', 0)} native only, "
                  f"{counts['py_cached']} with Python frames (of the others with Python frames "
                  f"{counts.get('find_hit', 0)} found, {counts.get('find_miss', 0)} not found)")
    calls = counts.get("on_event_calls")
    if calls:
        python += (f"; on_event {calls} calls, {ns_per_tick * counts['on_event'] / calls:.0f} ns a call "
                   f"(push {ns_per_tick * counts['push'] / calls:.0f})")
    return f"{path}: {events} events, ns per event: " + ", ".join(parts) + frames + python


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    for path in sys.argv[1:]:
        print(summary(path))
