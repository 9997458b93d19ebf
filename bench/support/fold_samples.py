"""Reads the folded stacks stack_sampler.cpp writes and prints where the time went.

    python3 bench/support/fold_samples.py [--modules DIR ...] [--focus REGEX] [--exclude REGEX] FILE...

Frames written as "module@0xoffset" (no dynamic symbol) are named with addr2line from an
unstripped copy of the module found in a --modules directory (the build the stripped copies
came from). Prints the samples, the functions with the most samples of their own (leaf) and
the most samples under them (inclusive, counted once per stack); with --focus, the share of
samples with a frame matching REGEX, and what those frames called most.
"""
import argparse
import collections
import os
import re
import subprocess


def resolve(frames, module_dirs):
    """Names module@0xoffset frames with addr2line where an unstripped module is found."""
    by_module = collections.defaultdict(set)
    for frame in frames:
        match = re.fullmatch(r"(.+)@0x([0-9a-f]+)", frame)
        if match:
            by_module[match.group(1)].add(match.group(2))
    names = {}
    for module, offsets in by_module.items():
        path = next((os.path.join(d, module) for d in module_dirs
                     if os.path.exists(os.path.join(d, module))), None)
        if path is None:
            continue
        offsets = sorted(offsets)
        lines = subprocess.run(["addr2line", "-f", "-C", "-e", path,
                                *[f"0x{o}" for o in offsets]],
                               capture_output=True, text=True, check=True).stdout.splitlines()
        for index, offset in enumerate(offsets):
            function = lines[2 * index].replace(" ", "_").replace(";", "")
            names[f"{module}@0x{offset}"] = f"{function}[{module}]"
    return names


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--modules", action="append", default=[])
    parser.add_argument("--focus")
    parser.add_argument("--exclude", help="leave out stacks with a frame matching this")
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("files", nargs="+")
    args = parser.parse_args()
    stacks = collections.Counter()
    for path in args.files:
        with open(path) as f:
            for line in f:
                stack, _, count = line.rstrip("\n").rpartition(" ")
                stacks[stack] += int(count)
    frames = {frame for stack in stacks for frame in stack.split(";")}
    names = resolve(frames, args.modules)
    total = sum(stacks.values())
    own = collections.Counter()
    under = collections.Counter()
    focus = re.compile(args.focus) if args.focus else None
    focused = 0
    focus_calls = collections.Counter()
    exclude = re.compile(args.exclude) if args.exclude else None
    for stack, count in list(stacks.items()):
        named = [names.get(frame, frame) for frame in stack.split(";")]
        if exclude and any(exclude.search(frame) for frame in named):
            total -= count
            continue
        own[named[-1]] += count
        for frame in set(named):
            under[frame] += count
        if focus:
            if any(focus.search(frame) for frame in named):
                focused += count
                focus_calls[named[-1]] += count  # where those stacks spent their time, by leaf
    print(f"{total} samples")
    print(f"\nmost samples of their own:")
    for name, count in own.most_common(args.top):
        print(f"  {100 * count / total:6.2f}%  {name[:160]}")
    print(f"\nmost samples under them:")
    for name, count in under.most_common(args.top):
        print(f"  {100 * count / total:6.2f}%  {name[:160]}")
    if focus:
        print(f"\nstacks with a frame matching {args.focus!r}: {focused} samples, "
              f"{100 * focused / max(total, 1):.2f}%; their leaves:")
        for name, count in focus_calls.most_common(args.top):
            print(f"  {100 * count / total:6.2f}%  {name[:160]}")


if __name__ == "__main__":
    main()
