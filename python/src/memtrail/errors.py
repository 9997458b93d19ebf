"""memtrail's errors as Python exceptions: one class per memtrail_error_code (memtrail.h), all
under MemtrailError, each carrying the code and librecorder's message."""

from __future__ import annotations

import enum


class ErrorCode(enum.IntEnum):
    """memtrail_error_code, as memtrail.h numbers it."""

    OK = 0
    OUT_OF_MEMORY = 1
    BAD_ARGUMENT = 2
    UNKNOWN_POINTER = 3
    BAD_CONFIG = 4
    NOT_STARTED = 5
    IO = 6
    DEVICE = 7
    INTERNAL = 8


class MemtrailError(RuntimeError):
    """A memtrail call failed: `code` says what kind of failure, `message` what exactly."""

    code: ErrorCode = ErrorCode.INTERNAL

    def __init__(self, message: str, code: ErrorCode | None = None) -> None:
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code


class OutOfMemoryError(MemtrailError):
    """The device has no room for the request (torch.cuda.OutOfMemoryError's counterpart)."""

    code = ErrorCode.OUT_OF_MEMORY


class BadArgumentError(MemtrailError, ValueError):
    """An argument memtrail cannot take: a negative size, a device that does not exist, ..."""

    code = ErrorCode.BAD_ARGUMENT


class UnknownPointerError(MemtrailError):
    """A pointer memtrail does not hold: never allocated by memtrail, or freed already."""

    code = ErrorCode.UNKNOWN_POINTER


class ConfigError(MemtrailError):
    """A bad setting: a MEMTRAIL_* environment variable or an allocator configuration string."""

    code = ErrorCode.BAD_CONFIG


class NotStartedError(MemtrailError):
    """memtrail could not start: no usable device, or librecorder could not be loaded."""

    code = ErrorCode.NOT_STARTED


class SnapshotWriteError(MemtrailError, OSError):
    """A file could not be written (a snapshot): a missing folder, no permission, a full disk."""

    code = ErrorCode.IO


class DeviceError(MemtrailError):
    """The device failed in another way than running out of memory (a CUDA error)."""

    code = ErrorCode.DEVICE


class InternalError(MemtrailError):
    """A failure inside memtrail."""

    code = ErrorCode.INTERNAL


class AllocatorSwitchError(MemtrailError):
    """memtrail cannot become a framework's allocator any more (CUDA started already)."""

    code = ErrorCode.NOT_STARTED


_CLASS_OF_CODE: dict[int, type[MemtrailError]] = {
    ErrorCode.OUT_OF_MEMORY: OutOfMemoryError,
    ErrorCode.BAD_ARGUMENT: BadArgumentError,
    ErrorCode.UNKNOWN_POINTER: UnknownPointerError,
    ErrorCode.BAD_CONFIG: ConfigError,
    ErrorCode.NOT_STARTED: NotStartedError,
    ErrorCode.IO: SnapshotWriteError,
    ErrorCode.DEVICE: DeviceError,
}


def error_for(code: int, message: str) -> MemtrailError:
    """The exception for a memtrail_error_code and its message."""
    cls = _CLASS_OF_CODE.get(code, InternalError)
    known = code if code in ErrorCode.__members__.values() else ErrorCode.INTERNAL
    return cls(message, ErrorCode(known))
