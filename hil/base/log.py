"""The `hil` logger: every line the harness says to a person goes through it.

Progress steps ("export resnet8 (cache miss)…", "aot: 1.20 s") are INFO records; things a person
waits on or should know (a held place or run folder, a fallback to the simulated Neutron backend)
are WARNING records. Records carry no `[hil] ` prefix: a handler adds it when it draws a line, so
a project's logging config, pytest's `caplog` and `--log-cli-level` see plain messages under the
`hil` name and can capture, filter or redirect them. The front ends attach the handlers: the `hil`
command one on stderr (`drawn_on`), the pytest plugin one on its terminal reporter (hil.plugin.hooks).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
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
    if old_level == logging.NOTSET:
        LOG.setLevel(level)
    try:
        yield handler
    finally:
        LOG.removeHandler(handler)
        LOG.setLevel(old_level)
