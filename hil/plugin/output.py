"""What the pytest plugin lets reach a person: `hil` log records on the terminal, third-party noise not.

Every harness line is a record of the `hil` logger (hil.base.log), so pytest's own logging sees it:
`caplog`, the "Captured log" sections of a failed test, `--log-cli-level=INFO`, a project's
`logging.config`. For a person at the terminal the plugin also draws the records itself through
pytest's terminal reporter, past output capture as live logging does: WARNING and above always
(a held place, a busy run folder), INFO (each step of a run) with `-v`. With live logging on
(`--log-cli-level`, `log_cli = true`) pytest draws them, and the plugin stays out of its way.

A console handler on the root logger (a conftest's `logging.basicConfig()`, or the one executorch's
module-level `logging.debug` makes) does not draw the records a second time (hil.base.log.drawn_by_front_end).

The `hil` logger is set to INFO only when nobody set its level (a logging config wins), so the
step records reach pytest's handlers; both are undone at the end of the session.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable

import pytest

from hil.base import log
from hil.base.quiet import filter_specs, quiet_loggers

_STATE = pytest.StashKey[tuple[logging.Handler | None, int]]()
_UNDO = pytest.StashKey[Callable[[], None]]()


class TerminalHandler(logging.Handler):
    """`    [hil] message` lines through pytest's terminal reporter, past the test's output capture."""

    def __init__(self, config: pytest.Config, level: int) -> None:
        super().__init__(level)
        self._reporter = config.pluginmanager.get_plugin("terminalreporter")
        self._capture = config.pluginmanager.get_plugin("capturemanager")
        self.setFormatter(log.PrefixFormatter())

    def emit(self, record: logging.LogRecord) -> None:
        try:
            line = self.format(record)
            with self._capture.global_and_fixture_disabled() if self._capture else contextlib.nullcontext():
                self._reporter.write_line(f"    {line}")
        except Exception:  # a broken terminal must not fail the test that logged
            self.handleError(record)


def _live_logging(config: pytest.Config) -> bool:
    """pytest draws log records itself (`--log-cli-level`, or `log_cli` in the ini file); never when its
    logging plugin is off (`-p no:logging`, as mutmut runs the suite), which also takes the ini key away."""
    if not config.pluginmanager.has_plugin("logging"):
        return False
    return config.getoption("log_cli_level", None) is not None or bool(config.getini("log_cli"))


def configure(config: pytest.Config) -> None:
    """Silence the known third-party warnings; let the `hil` INFO records reach pytest's handlers."""
    # Before the project's own ini lines, so its `filterwarnings` (and `-W`) still win.
    config.getini("filterwarnings")[:0] = filter_specs()
    quiet_loggers()
    # pytest's handlers (caplog, the report sections, live logging) and a project's files keep getting the
    # records; a console handler on the root logger (a conftest's logging.basicConfig) draws no second copy.
    config.stash[_UNDO] = log.drawn_by_front_end()
    config.stash[_STATE] = (None, log.LOG.level)
    if log.LOG.level == logging.NOTSET:
        log.LOG.setLevel(logging.INFO)


def draw_on_terminal(config: pytest.Config) -> None:
    """Draw `hil` records on the terminal reporter (registered by now), unless live logging does."""
    if config.pluginmanager.get_plugin("terminalreporter") is None or _live_logging(config):
        return
    handler = TerminalHandler(config, logging.INFO if config.get_verbosity() >= 1 else logging.WARNING)
    log.LOG.addHandler(handler)
    config.stash[_STATE] = (handler, config.stash[_STATE][1])


def unconfigure(config: pytest.Config) -> None:
    handler, level = config.stash.get(_STATE, (None, log.LOG.level))
    if handler is not None:
        log.LOG.removeHandler(handler)
    log.LOG.setLevel(level)
    undo = config.stash.get(_UNDO, None)
    if undo is not None:
        undo()
        del config.stash[_UNDO]
