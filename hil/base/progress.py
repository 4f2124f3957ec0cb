"""Progress people can see: each step of a run announced as it starts, a bar for the slow ones.

A cold `hil run` spends tens of seconds importing torch, exporting and simulating before the
board does anything; printed only at the end, a step looks like a hang. So every step is
announced when it starts ("export resnet8 (cache miss)…"). On a terminal a step still running
after BAR_DELAY_S gets a tqdm bar: a real percentage when the step reports one (pyOCD's flash
progress callback), otherwise the elapsed time, so a person sees it is alive. Not on a terminal
(CI logs, pipes) the same steps are plain lines, and `-q` prints nothing extra. Every line is an
INFO record of the `hil` logger (hil.base.log), which the front end draws: `hil run` on stderr, the
pytest plugin through pytest's terminal reporter with `-v` (and caplog, `--log-cli-level` see them).
"""

from __future__ import annotations

import shutil
import sys
import threading
import time
from collections.abc import Callable
from typing import Any, TextIO

from hil.base import log

# A step that ends within this many seconds never shows a bar (a bar that flashes is noise).
BAR_DELAY_S = 2.0
_TICK_S = 0.25


class Progress:
    """Silent: the interface every reporter implements (`-q`, library calls)."""

    def start(self, name: str, detail: str = "") -> None:
        """A step begins; `detail` says what it does in words ("export resnet8 (cache miss)")."""

    def advance(self, fraction: float) -> None:
        """The running step is `fraction` (0..1) done, when it can tell."""

    def finish(self, name: str, seconds: float, ok: bool) -> None:
        """The step ended after `seconds`; `ok` is False when it raised."""

    def note(self, text: str) -> None:
        """A one-off remark that belongs between the steps."""


class Lines(Progress):
    """One plain line as each step starts and, with `durations`, one as it ends; by default an INFO
    record of the `hil` logger."""

    def __init__(self, write: Callable[[str], None] = log.info, *, durations: bool = True) -> None:
        self._write = write
        self._durations = durations

    def start(self, name: str, detail: str = "") -> None:
        self._write(f"{detail or name}…")

    def finish(self, name: str, seconds: float, ok: bool) -> None:
        if self._durations or not ok:
            self._write(f"{name}: {seconds:.2f} s{'' if ok else ' (failed)'}")

    def note(self, text: str) -> None:
        self._write(text)


class Terminal(Lines):
    """Lines, plus a tqdm bar on `stream` for a step still running after BAR_DELAY_S (a ticker thread keeps
    it moving). The lines go to `write`, by default `[hil] line` straight onto `stream`; the bar is
    closed before a line is written, so a handler drawing on the same stream never interleaves with it."""

    def __init__(self, stream: TextIO, *, durations: bool = True, write: Callable[[str], None] | None = None) -> None:
        super().__init__(write or (lambda line: print(f"{log.PREFIX}{line}", file=stream, flush=True)),
                         durations=durations)
        # Imported here, in the main thread: imported first by the ticker thread while the main thread
        # imports torch, it waits on the interpreter's import locks and no bar is ever drawn.
        from tqdm import tqdm

        self._tqdm = tqdm
        self._stream = stream
        self._lock = threading.Lock()
        self._bar: Any = None
        self._fraction: float | None = None
        self._stop = threading.Event()
        self._ticker: threading.Thread | None = None

    def start(self, name: str, detail: str = "") -> None:
        super().start(name, detail)
        self._fraction = None
        self._stop = threading.Event()
        self._ticker = threading.Thread(target=self._tick, args=(name, time.monotonic(), self._stop),
                                        name=f"hil progress: {name}", daemon=True)
        self._ticker.start()

    def advance(self, fraction: float) -> None:
        with self._lock:
            self._fraction = min(1.0, max(0.0, float(fraction)))

    def finish(self, name: str, seconds: float, ok: bool) -> None:
        self._stop.set()
        if self._ticker is not None:
            self._ticker.join(timeout=2 * _TICK_S)
        self._close_bar()
        super().finish(name, seconds, ok)

    def note(self, text: str) -> None:
        """A line between bars: the running step's bar is closed first and drawn again on the next tick."""
        self._close_bar()
        super().note(text)

    def _close_bar(self) -> None:
        with self._lock:
            if self._bar is not None:
                self._bar.close()
                self._bar = None

    def _tick(self, name: str, started: float, stop: threading.Event) -> None:
        if stop.wait(BAR_DELAY_S):
            return
        while True:
            with self._lock:
                if stop.is_set():
                    return
                if self._bar is None:
                    # A terminal that reports no size (a fresh pty, some CI consoles) would make tqdm
                    # hide the bar as "below the screen": fall back to 80x24 as shutil does.
                    size = shutil.get_terminal_size()
                    self._bar = self._tqdm(desc=f"  {name}", total=None, file=self._stream, leave=False, unit="",
                                           bar_format="{desc}: {elapsed}", mininterval=0, ncols=size.columns,
                                           nrows=size.lines)
                    self._bar.start_t = self._bar._time() - (time.monotonic() - started)
                if self._fraction is not None and self._bar.total is None:
                    self._bar.total = 100
                    self._bar.bar_format = "{desc}: {percentage:3.0f}%|{bar}| {elapsed}"
                if self._fraction is not None:
                    self._bar.n = round(100 * self._fraction)
                self._bar.refresh()
            if stop.wait(_TICK_S):
                return


class Within(Progress):
    """The steps inside another one (a board's connect, flash, run_to_breakpoint inside the run's `flash`
    and `run`): each announced as a note of `outer` as it starts, a failure said, the fraction done passed
    on to the running outer step's bar. The outer step keeps the one bar."""

    def __init__(self, outer: Progress) -> None:
        self._outer = outer

    def start(self, name: str, detail: str = "") -> None:
        self._outer.note(f"  {detail or name}…")

    def advance(self, fraction: float) -> None:
        self._outer.advance(fraction)

    def finish(self, name: str, seconds: float, ok: bool) -> None:
        if not ok:
            self._outer.note(f"  {name}: {seconds:.2f} s (failed)")


def for_stream(stream: TextIO = sys.stderr, *, quiet: bool = False, durations: bool = True) -> Progress:
    """The reporter for a command line: nothing with `quiet`, a live one on a terminal, plain lines otherwise.

    The lines are `hil` log records; the caller draws them on `stream` (hil.base.log.drawn_on)."""
    if quiet:
        return Progress()
    if stream.isatty():
        return Terminal(stream, durations=durations, write=log.info)
    return Lines(log.info, durations=durations)
