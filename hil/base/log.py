"""The `hil` logger: every line the harness says to a person goes through it.

Progress steps ("export resnet8 (cache miss)…", "aot: 1.20 s") are INFO records; things a person
waits on or should know (a held place or run folder, a fallback to the simulated Neutron backend)
are WARNING records. Records carry no `[hil] ` prefix: a handler adds it when it draws a line, so
a project's logging config, pytest's `caplog` and `--log-cli-level` see plain messages under the
`hil` name and can capture, filter or redirect them. The front ends attach the handlers: the `hil`
command one on stderr (`drawn_on`), the pytest plugin one on its terminal reporter (hil.plugin.output).
A front end that draws the records keeps a console handler on the root logger (`logging.basicConfig()`,
a user's or a library's) from drawing them again (`drawn_by_front_end`): each line is printed once.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TextIO

LOG = logging.getLogger("hil")
PREFIX = "[hil] "


def info(text: str) -> None:
    """A progress line (INFO)."""
    LOG.info("%s", text, stacklevel=2)


def warning(text: str) -> None:
    """A line a person should see even without `-v` (WARNING)."""
    LOG.warning("%s", text, stacklevel=2)


class PrefixFormatter(logging.Formatter):
    """`[hil] message`, the look of every harness line on a terminal."""

    def __init__(self) -> None:
        super().__init__(f"{PREFIX}%(message)s")


class _RootButConsoles(logging.Handler):
    """Hands a `hil` record on to the root logger's handlers, as propagation would, except a plain
    `logging.StreamHandler`: the console handler `logging.basicConfig()` makes. That one drew every step a
    second time as `INFO:hil:...` under the front end's own `[hil]` line (executorch's exir/backend/
    backend_api.py:463 and :466 call the module-level `logging.debug`, which runs `basicConfig()` on a root
    logger without handlers, in the middle of `hil run`). Files (FileHandler), pytest's caplog, report and
    live-logging handlers (subclasses) get the records as before, once: pytest (9.2, `catching_logs`) also
    attaches its handlers straight to a logger that does not propagate, and those are not handed on again."""

    def emit(self, record: logging.LogRecord) -> None:
        for handler in logging.getLogger().handlers:
            if type(handler) is logging.StreamHandler or record.levelno < handler.level or handler in LOG.handlers:
                continue
            handler.handle(record)


def drawn_by_front_end() -> Callable[[], None]:
    """A front end draws the `hil` records itself from now on: they no longer propagate to the root logger,
    whose handlers other than a console handler still get them (`_RootButConsoles`). Returns the undo."""
    forward = _RootButConsoles()
    propagate = LOG.propagate
    LOG.propagate = False
    LOG.addHandler(forward)

    def undo() -> None:
        LOG.removeHandler(forward)
        LOG.propagate = propagate

    return undo


@contextmanager
def drawn_on(stream: TextIO, level: int = logging.INFO) -> Iterator[logging.Handler]:
    """Draw the `hil` records of `level` and above on `stream` (the command line's stderr) within the block.

    The logger's own level is set to `level` only when nobody set one, so a logging config wins; both
    are undone when the block ends, so a process calling the command twice never draws a line twice.
    """
    handler = logging.StreamHandler(stream)
    handler.setFormatter(PrefixFormatter())
    handler.setLevel(level)
    old_level = LOG.level
    LOG.addHandler(handler)
    undo = drawn_by_front_end()
    if old_level == logging.NOTSET:
        LOG.setLevel(level)
    try:
        yield handler
    finally:
        undo()
        LOG.removeHandler(handler)
        LOG.setLevel(old_level)
