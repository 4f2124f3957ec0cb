"""Timed steps: every stage of a run is logged with its duration, like labgrid's step log.

Each step is announced to a `hil.base.progress.Progress` as it starts (so a slow one never looks like
a hang) and timed into `seconds`, which the run keeps in profile.json and manifest.json. The one
timer of the harness: the pipeline's stages and each board's own steps (connect, flash,
run_to_breakpoint, ...: hil.base.progress.Within) are timed and rounded alike.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from hil.base.progress import Progress


# Seconds are kept to 0.1 ms: finer is noise for steps of a process, gdb or a probe.
DECIMALS = 4


class StepTimer:
    """Collects `name -> seconds` for each stage; reports each as it starts and ends."""

    def __init__(self, report: Callable[[str], None] | None = None, progress: Progress | None = None) -> None:
        self.seconds: dict[str, float] = {}
        self.report = report
        self.progress = progress or Progress()

    @contextmanager
    def step(self, name: str, detail: str = "") -> Iterator[Callable[[float], None]]:
        """Time one step; the yielded callable takes the step's fraction done (0..1), when it knows one."""
        start = time.monotonic()
        self.progress.start(name, detail)
        ok = False
        try:
            yield self.progress.advance
            ok = True
        finally:
            elapsed = time.monotonic() - start
            self.seconds[name] = round(self.seconds.get(name, 0.0) + elapsed, DECIMALS)
            self.progress.finish(name, elapsed, ok)
            if self.report:
                self.report(f"{name}: {elapsed:.2f} s")
