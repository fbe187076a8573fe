"""Running a long C call: cancel tokens, progress callbacks, Ctrl-C.

A long call (plan, solve, auto-shard) runs in a worker thread while the main thread waits on it;
Ctrl-C in the main thread triggers the call's cancel token, waits for the call to stop (at its next
check) and re-raises KeyboardInterrupt. Called from another thread, the call runs in place.
Progress callbacks run on the thread that makes the C call; an exception raised in one cancels
the call and is re-raised to the caller.
"""
from __future__ import annotations

import ctypes
import signal
import threading
from typing import Any, Callable, Mapping, TypeVar

from ._handle import Owner
from ._lib import call, lib

R = TypeVar("R")


class CancelToken(Owner):
    """A cancel token: pass it as ``cancel=`` to plan / solve / auto_shard and call ``cancel()``
    from any thread to stop them (a plan then raises CancelledError; a solve returns its best
    assignment with status CANCELLED, or raises CancelledError when it has none). A token stays
    triggered: use a new one per call you want to cancel separately."""

    _kind = "alpa_cancel_token"

    def __init__(self) -> None:
        ptr = ctypes.c_void_p()
        call(lib.alpa_cancel_token_create, ctypes.byref(ptr))
        self._own(ptr.value, lib.alpa_cancel_token_destroy, self._kind)
        self._triggered = False

    def cancel(self) -> None:
        """Requests cancellation; safe from any thread, any number of times."""
        self._triggered = True
        lib.alpa_cancel_token_trigger(self._ptr)

    @property
    def cancelled(self) -> bool:
        return self._triggered


class CallbackGuard:
    """Holds the exception a Python callback raised inside a C call (ctypes would print and
    drop it), so that it can be re-raised once the call returns."""

    def __init__(self) -> None:
        self.exc: BaseException | None = None

    def run(self, fn: Callable[[], Any]) -> int:
        if self.exc is not None:
            return 1
        try:
            fn()
            return 0
        except BaseException as e:  # noqa: BLE001 - re-raised after the C call
            self.exc = e
            return 1

    def reraise(self) -> None:
        if self.exc is not None:
            exc, self.exc = self.exc, None
            raise exc


class OptionsObject(Owner):
    """An alpa_<family>_options handle set by name (the library validates every value; None
    leaves an option at its default, booleans are 1 / 0), holding what the C side borrows for
    the call (cancel token, progress callback). Subclasses name the C family in `_kind`."""

    _kind = ""

    def __init__(self, options: Mapping[str, Any]) -> None:
        out = ctypes.c_void_p()
        call(getattr(lib, self._kind + "_create"), ctypes.byref(out))
        self._own(out.value, getattr(lib, self._kind + "_destroy"), self._kind)
        self._keep: list[Any] = []
        set_by_name = getattr(lib, self._kind + "_set_by_name")
        for name, value in options.items():
            if value is None:
                continue
            text = ("1" if value else "0") if isinstance(value, bool) else str(value)
            call(set_by_name, self._ptr, name.encode(), text.encode())

    def set_cancel_token(self, token: CancelToken) -> None:
        self._keep.append(token)
        call(getattr(lib, self._kind + "_set_cancel_token"), self._ptr, token._ptr)


def run_cancellable(fn: Callable[[], R], token: CancelToken) -> R:
    """Runs fn(), making Ctrl-C trigger `token` when called from the main thread."""
    if threading.current_thread() is not threading.main_thread():
        return fn()
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = fn()
        except BaseException as e:  # noqa: BLE001 - re-raised in the caller's thread
            box["error"] = e

    worker = threading.Thread(target=target, name="alpa-call", daemon=True)
    interrupted: list[bool] = []
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        # Ctrl-C only triggers the token while the call runs: a KeyboardInterrupt raised at an
        # arbitrary point (say inside worker.start()) could leave the worker running into
        # interpreter shutdown, where a daemon thread inside the library is torn down.
        def on_sigint(signum: int, frame: Any) -> None:
            interrupted.append(True)
            token.cancel()

        previous = signal.signal(signal.SIGINT, on_sigint)
        try:
            worker.start()
            while worker.is_alive():
                worker.join(0.25)
        finally:
            signal.signal(signal.SIGINT, previous)
    else:
        # The caller installed its own SIGINT handler: leave it in charge, and cancel the call
        # when it raises KeyboardInterrupt.
        worker.start()
        while worker.is_alive():
            try:
                worker.join(0.25)
            except KeyboardInterrupt:
                interrupted.append(True)
                token.cancel()
    if interrupted:
        raise KeyboardInterrupt
    if "error" in box:
        raise box["error"]
    return box["value"]
