"""Ownership of libalpa handles.

Every handle the binding creates is wrapped in a ``Handle``: it is freed exactly once, either
deterministically (``close()``, or leaving a ``with`` block) or when the Python object is garbage
collected (``weakref.finalize``; also at interpreter exit). Creations and destructions are counted
per C type so that tests can prove nothing leaks (``handle_counts()``, ``live_handles()``).
"""
from __future__ import annotations

import threading
import weakref
from collections import Counter
from typing import Any, Callable, TypeVar

_lock = threading.Lock()
_created: Counter[str] = Counter()
_destroyed: Counter[str] = Counter()


def _destroy(destroy: Callable[[int], None], ptr: int, kind: str) -> None:
    destroy(ptr)
    with _lock:
        _destroyed[kind] += 1


def handle_counts() -> dict[str, tuple[int, int]]:
    """{C type: (created, destroyed)} since the module was imported."""
    with _lock:
        return {k: (_created[k], _destroyed[k]) for k in sorted(set(_created) | set(_destroyed))}


def live_handles() -> int:
    """Handles created and not yet destroyed."""
    with _lock:
        return sum(_created.values()) - sum(_destroyed.values())


T = TypeVar("T", bound="Owner")


class Owner:
    """Base of the Python objects that own one libalpa handle."""

    _kind = "handle"
    _destroy_fn: Callable[[Any], None]
    __ptr: int | None = None

    def _own(self, ptr: int | None, destroy: Callable[[Any], None], kind: str) -> None:
        if not ptr:
            raise ValueError(f"{kind}: NULL handle")
        self.__ptr = ptr
        with _lock:
            _created[kind] += 1
        self.__finalizer = weakref.finalize(self, _destroy, destroy, ptr, kind)

    @property
    def _ptr(self) -> int:
        if self.__ptr is None:
            raise ValueError(f"{type(self).__name__} is closed")
        return self.__ptr

    @property
    def closed(self) -> bool:
        """True once the handle has been freed (close(), a with block)."""
        return self.__ptr is None

    def close(self) -> None:
        """Frees the handle now (idempotent). The object is unusable afterwards."""
        if self.__ptr is not None:
            self.__ptr = None
            self.__finalizer()

    def __enter__(self: T) -> T:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
