"""Snapshots written when something happens rather than when asked: on out-of-memory, and when
the process receives a signal. Paths are patterns: %p the pid, %d the device, %t the time (ns
since the epoch), %% a percent sign."""

from __future__ import annotations

import signal as signals
from typing import Optional, Union

from . import _arguments, _native


def on_oom(dump: Optional[str] = "oom-%p.memtrail") -> None:
    """After every out-of-memory, writes a snapshot to `dump` (".pickle": PyTorch's format) and
    names it on stderr; None switches it off. Replaces MEMTRAIL_OOM_DUMP and earlier calls."""
    encoded = _arguments.text("on_oom", "dump", dump or "")
    _native.check(_native.started().memtrail_set_oom_dump(encoded))


def dump_on_signal(dump: Optional[str] = "memtrail-%p-%t.memtrail",
                   signal: Union[int, signals.Signals] = signals.SIGUSR1) -> None:
    """Whenever the process receives `signal` (`kill -USR1 PID`), writes a snapshot to `dump`
    from a helper thread, so a long run can be looked at while it runs; None switches it off.
    Replaces MEMTRAIL_SIGNAL_DUMP and earlier calls."""
    number = _arguments.integer("dump_on_signal", "signal", signal, 0, _arguments.INT_MAX)
    encoded = _arguments.text("dump_on_signal", "dump", dump or "")
    _native.check(_native.started().memtrail_set_signal_dump(number, encoded))
