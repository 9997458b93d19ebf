"""The commands this package carries, run as `memtrail ...` (or `python -m memtrail ...`) and
`memtrail-viewer ...`."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import List

from ._native import cli_path, viewer_path


def _run(name: str, path: Path, missing: str) -> None:
    if not os.access(path, os.X_OK):
        sys.exit(f"memtrail: {name} is missing at {path}; {missing}")
    os.execv(path, [name, *sys.argv[1:]])


def _ranks_on_a_cluster(args: List[str]) -> None:
    """`memtrail ranks --scheduler ADDRESS PATHS...`: the summaries made on a Dask cluster's
    workers, then `memtrail ranks` on them here."""
    from dask.distributed import Client

    from . import ranks

    at = args.index("--scheduler")
    if at + 1 >= len(args):
        sys.exit("memtrail: ranks: --scheduler needs the scheduler's address (tcp://HOST:8786)")
    address = args[at + 1]
    rest = args[:at] + args[at + 2:]
    as_json = "--json" in rest
    paths = [a for a in rest if a != "--json"]
    if not paths or any(a.startswith("-") for a in paths):
        sys.exit("memtrail: ranks: with --scheduler, give PATH... and optionally --json")
    try:
        with Client(address) as client:
            summaries = ranks.summarize(paths, client=client)
        sys.stdout.write(ranks.report(summaries, json=as_json))
    except ranks.RanksError as error:
        sys.exit(str(error))


def main() -> None:
    args = sys.argv[1:]
    if args[:1] == ["ranks"] and any(a == "--scheduler" for a in args):
        _ranks_on_a_cluster(args[1:])
        return
    _run("memtrail", cli_path(), "reinstall the package")


def viewer() -> None:
    _run("memtrail-viewer", viewer_path(),
         "the package was built without it (it needs GLFW and OpenGL): build memtrail with "
         "the viewer, then reinstall the package; the memtrail command reads snapshots without it")
