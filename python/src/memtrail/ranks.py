"""Rank summaries on many cores or a Dask cluster, and the report of `memtrail ranks` on them.

    import memtrail.ranks
    from dask.distributed import Client
    client = Client("tcp://scheduler:8786")              # files on storage every worker sees
    summaries = memtrail.ranks.summarize(["/shared/run42"], client=client)
    print(memtrail.ranks.report(summaries))               # what `memtrail ranks` prints

Each file is one task: a worker runs this package's own `memtrail summarize` on it, holding one
snapshot in memory, and writes its summary beside it (or into `output`). Without a client the
tasks run here, one process per core. The report is `memtrail ranks` run on the summaries, so it
is the command's own, byte for byte. Dask is the engine; memtrail has no scheduler of its own
(docs/ranks.md)."""

from __future__ import annotations

import os
import subprocess
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Iterable, List, Optional, Sequence

from ._native import cli_path

SNAPSHOT_EXTENSIONS = (".pickle", ".pkl", ".memtrail", ".zst")
SUMMARY_EXTENSION = ".summary.json"


class RanksError(RuntimeError):
    """A memtrail command failed; the message is its own ("memtrail: run.pickle: ...")."""


def snapshot_paths(paths: Iterable[str]) -> List[str]:
    """The snapshots `paths` name, as `memtrail ranks` finds them: files as given, folders
    searched recursively for .pickle, .pkl, .memtrail and .zst files, sorted."""
    out: List[str] = []
    for path in paths:
        path = os.fspath(path)
        if not os.path.isdir(path):
            out.append(path)
            continue
        found = []
        for folder, _, files in os.walk(path):
            for name in files:
                if name.endswith(SNAPSHOT_EXTENSIONS) and not name.endswith(SUMMARY_EXTENSION):
                    found.append(os.path.join(folder, name))
        out.extend(sorted(found))
    return out


def _command(*args: str) -> str:
    result = subprocess.run([str(cli_path()), *args], capture_output=True, text=True)
    if result.returncode != 0:
        raise RanksError(result.stderr.strip() or f"memtrail {args[0]} exited {result.returncode}")
    return result.stdout


def summarize_one(path: str, output: Optional[str] = None, device: Optional[int] = None) -> str:
    """Summarizes one snapshot with this package's `memtrail` (on whichever machine runs it);
    returns the summary's path."""
    args = ["summarize", "--jobs", "1"]
    if output is not None:
        args += ["--output", output]
    if device is not None:
        args += ["--device", str(device)]
    return _command(*args, path).strip()


def summarize(paths: Sequence[str], client: Any = None, output: Optional[str] = None,
              device: Optional[int] = None) -> List[str]:
    """The summary of every snapshot `paths` name (files and folders), in their order: one
    task per file on the Dask `client`'s workers, or with no client on this machine's cores.
    The files (and `output`) must be on storage every worker sees. Raises RanksError with the
    first failing file's message."""
    files = snapshot_paths(paths)
    if client is None:
        with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
            return list(pool.map(lambda p: summarize_one(p, output, device), files))
    futures = client.map(summarize_one, files, output=output, device=device, pure=False)
    return list(client.gather(futures))


def report(summaries: Sequence[str], json: bool = False) -> str:
    """What `memtrail ranks` prints for these summaries (its table, or with json=True its
    JSON): the command itself runs on them."""
    return _command("ranks", *(["--json"] if json else []), *summaries)
