"""Timed steps: every stage of a run is logged with its duration, like labgrid's step log."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager


class StepTimer:
    """Collects `name -> seconds` for each stage and reports each one as it ends."""

    def __init__(self, report: Callable[[str], None] | None = None) -> None:
        self.seconds: dict[str, float] = {}
        self._report = report

    @contextmanager
    def step(self, name: str) -> Iterator[None]:
        start = time.monotonic()
        try:
            yield
        finally:
            elapsed = time.monotonic() - start
            self.seconds[name] = round(self.seconds.get(name, 0.0) + elapsed, 4)
            if self._report:
                self._report(f"[hil] {name}: {elapsed:.2f} s")
