"""The commands this package carries, run as `memtrail ...` (or `python -m memtrail ...`) and
`memtrail-viewer ...`."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from ._native import cli_path, viewer_path


def _run(name: str, path: Path, missing: str) -> None:
    if not os.access(path, os.X_OK):
        sys.exit(f"memtrail: {name} is missing at {path}; {missing}")
    os.execv(path, [name, *sys.argv[1:]])


def main() -> None:
    _run("memtrail", cli_path(), "reinstall the package")


def viewer() -> None:
    _run("memtrail-viewer", viewer_path(),
         "the package was built without it (it needs GLFW and OpenGL): build memtrail with "
         "the viewer, then reinstall the package; the memtrail command reads snapshots without it")
