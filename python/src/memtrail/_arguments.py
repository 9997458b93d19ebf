"""Checks on what the package passes to C: ctypes silently cuts an int to its C type (2**64 + 5
becomes 5), turns a str into a pointer to its buffer, and ends a string at its first NUL. Every
value is checked here first, with errors like torch's, each naming the call, the argument and
what is accepted: TypeError for the wrong type, BadArgumentError (a ValueError) for a value the
call does not accept, OverflowError past the C type's range."""

from __future__ import annotations

import operator
import os
from typing import Any, Optional

from .errors import BadArgumentError

INT_MAX = 2**31 - 1  # a device, a signal (C int)
SSIZE_MAX = 2**63 - 1  # a size (ssize_t)
SIZE_MAX = 2**64 - 1  # a count (size_t)
POINTER_MAX = 2**64 - 1  # an address, a stream handle (void*)


def _not_a(call: str, name: str, accepted: str, value: Any) -> TypeError:
    return TypeError(f"memtrail: {call}(): argument '{name}' must be {accepted}, "
                     f"not {type(value).__name__}")


def integer(call: str, name: str, value: Any, low: int, high: int) -> int:
    """`value` as an int in low..high: TypeError if it is no integer, BadArgumentError below
    `low`, OverflowError above `high` (the C type's limit)."""
    if isinstance(value, (bool, float)):
        raise _not_a(call, name, "int", value)
    try:
        number = operator.index(value)
    except TypeError:
        raise _not_a(call, name, "int", value) from None
    accepted = f"memtrail: {call}(): argument '{name}' must be {low} to {high}, not {number}"
    if number < low:
        raise BadArgumentError(accepted)
    if number > high:
        raise OverflowError(accepted)
    return number


def address(call: str, name: str, value: Any) -> int:
    """A device address (0 to 2**64 - 1); a str or bytes is refused, never passed as a pointer."""
    return integer(call, name, value, 0, POINTER_MAX)


def text(call: str, name: str, value: Optional[str]) -> Optional[bytes]:
    """A str for a C string (None stays NULL): TypeError for another type, BadArgumentError for
    a NUL character, which would end the C string early."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise _not_a(call, name, "str", value)
    if "\0" in value:
        raise BadArgumentError(f"memtrail: {call}(): argument '{name}' contains a NUL "
                               f"character, which would cut it short: {value!r}")
    return value.encode()


def path(call: str, name: str, value: Any) -> bytes:
    """A file path (str, bytes or os.PathLike) as bytes: TypeError for another type,
    BadArgumentError for an embedded NUL (the file written would be the name cut at it)."""
    try:
        encoded = os.fsencode(value)
    except TypeError:
        raise _not_a(call, name, "str, bytes or os.PathLike", value) from None
    if b"\0" in encoded:
        raise BadArgumentError(f"memtrail: {call}(): argument '{name}' contains a NUL byte, "
                               f"which would cut the path short: {value!r}")
    return encoded


def flag(call: str, name: str, value: Any) -> bool:
    """A bool (torch's switches): TypeError for another type, so that "False" is not taken as
    true."""
    if not isinstance(value, bool):
        raise _not_a(call, name, "bool", value)
    return value
