"""The `memtrail` command this package carries, run as `memtrail ...` or `python -m memtrail ...`."""

from __future__ import annotations

import os
import sys

from ._native import cli_path


def main() -> None:
    path = cli_path()
    if not os.access(path, os.X_OK):
        sys.exit(f"memtrail: the memtrail command is missing at {path}; reinstall the package")
    os.execv(path, ["memtrail", *sys.argv[1:]])
