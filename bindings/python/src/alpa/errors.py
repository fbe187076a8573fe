"""Exceptions: one class per libalpa status, all deriving from AlpaError.

Each also derives from the closest built-in exception (ValueError for bad input, OSError for I/O,
TimeoutError, MemoryError, NotImplementedError), so ``except ValueError`` works as a Python user
expects while ``except alpa.AlpaError`` catches everything the library reports.
"""
from __future__ import annotations


class AlpaError(Exception):
    """A libalpa call failed. ``status`` is the ALPA_ERR_* code, ``message`` the library's
    message (it names the offending element: a node, an edge, an op, a field)."""

    status: int = 0

    def __init__(self, message: str, status: int | None = None) -> None:
        if status is not None:
            self.status = status
        self.message = message
        Exception.__init__(self, message)

    @property
    def status_name(self) -> str:
        from ._lib import cstr, lib

        return cstr(lib.alpa_status_string(self.status))

    def __str__(self) -> str:
        return self.message or self.status_name

    def __reduce__(self):  # picklable across processes
        return (type(self), (self.message, self.status))


class InvalidArgumentError(AlpaError, ValueError):
    """ALPA_ERR_INVALID_ARGUMENT: a bad argument, spec or option value."""

    status = 1


class InvalidProblemError(AlpaError, ValueError):
    """ALPA_ERR_INVALID_PROBLEM: inconsistent problem data; the message names the element."""

    status = 2


class InfeasibleError(AlpaError):
    """ALPA_ERR_INFEASIBLE: no assignment / plan meets the constraints or the memory."""

    status = 3


class SolveTimeoutError(AlpaError, TimeoutError):
    """ALPA_ERR_TIMEOUT: the time limit passed before any answer."""

    status = 4


class CancelledError(AlpaError):
    """ALPA_ERR_CANCELLED: cancelled (token, callback or Ctrl-C) before any answer."""

    status = 5


class UnsupportedError(AlpaError, NotImplementedError):
    """ALPA_ERR_UNSUPPORTED."""

    status = 6


class AlpaMemoryError(AlpaError, MemoryError):
    """ALPA_ERR_OUT_OF_MEMORY."""

    status = 7


class InternalError(AlpaError):
    """ALPA_ERR_INTERNAL: a bug in libalpa."""

    status = 8


class AlpaIOError(AlpaError, OSError):
    """ALPA_ERR_IO: a file could not be read or written (the message starts with the path)."""

    status = 9

    def __init__(self, message: str, status: int | None = None) -> None:
        OSError.__init__(self, message)
        self.message = message
        if status is not None:
            self.status = status


class ParseError(AlpaError, ValueError):
    """ALPA_ERR_PARSE: bytes that are not valid JSON or not the expected format."""

    status = 10


class InvalidGraphError(AlpaError, ValueError):
    """ALPA_ERR_INVALID_GRAPH: an inconsistent operator graph; the message names the op."""

    status = 11


_BY_STATUS: dict[int, type[AlpaError]] = {
    cls.status: cls
    for cls in (
        InvalidArgumentError,
        InvalidProblemError,
        InfeasibleError,
        SolveTimeoutError,
        CancelledError,
        UnsupportedError,
        AlpaMemoryError,
        InternalError,
        AlpaIOError,
        ParseError,
        InvalidGraphError,
    )
}


def error_from_status(status: int, message: str) -> AlpaError:
    cls = _BY_STATUS.get(status, AlpaError)
    return cls(message, status)
