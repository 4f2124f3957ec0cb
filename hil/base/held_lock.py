"""The release half of the harness's flock-based locks (a probe, a run folder), written once.

Why a base class: both locks keep the lock file after use (removing it would race a process waiting
on it) and blank the holder record before unlocking, so the next holder never reads a stale one.
"""

from __future__ import annotations

import fcntl
import os
from typing import Self


class HeldLock:
    """An flock held on the open descriptor `_fd`; subclasses provide `acquire()`."""

    _fd: int | None = None

    def acquire(self) -> Self:
        raise NotImplementedError

    def release(self) -> None:
        """Let the next holder in; safe to call twice. The file stays (removing it would race a waiter)."""
        fd, self._fd = self._fd, None
        if fd is None:
            return
        try:
            os.ftruncate(fd, 0)
            fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)

    def __enter__(self) -> Self:
        return self.acquire()

    def __exit__(self, *_exc: object) -> None:
        self.release()
