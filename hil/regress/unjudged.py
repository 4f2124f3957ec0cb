"""The runs a session asked to judge and could not, said once more at the end of the terminal summary.

A run that was not judged (no baseline, too few history runs of its time base, a baseline of another
time base, machine load) passes unless `--hil-strict` is on; a pytest warning says so as it happens,
but warnings scroll by. So each such run also rides on its test's report (`REPORT_ATTR`, which
pytest-xdist carries from a worker to the controller like every report attribute) and the process that
writes the terminal summary lists them all in one section, `hil: runs not judged`.
"""

from __future__ import annotations

import pytest

# Attribute of a TestReport holding the lines "<model> on <board> (<time base>): <why>".
REPORT_ATTR = "hil_not_judged"
SECTION = "hil: runs not judged"


def attach(report: pytest.TestReport, lines: list[str]) -> None:
    """Put `lines` (one per run not judged) on the report, for the summary."""
    if lines:
        setattr(report, REPORT_ATTR, [*(getattr(report, REPORT_ATTR, None) or []), *lines])


class NotJudgedSummary:
    """A plugin, registered per session: gathers the lines as reports arrive, writes them at the end."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self.lines += [f"{report.nodeid}: {line}" for line in getattr(report, REPORT_ATTR, None) or []]

    def pytest_terminal_summary(self, terminalreporter: "pytest.TerminalReporter") -> None:
        if not self.lines:
            return
        terminalreporter.write_sep("=", SECTION, yellow=True)
        for line in self.lines:
            terminalreporter.write_line(line)
