"""A session whose only failures are the machine's (a part missing) ends with its own exit status, not 1.

Why: a nightly that asked for the runtime image (`HIL_FIRMWARE=runtime`, `--hil-firmware runtime`) on a
machine without the firmware sources cannot run at all, which says nothing about the model. The `hil`
command exits 3 there (hil.base.errors.EnvironmentFault); pytest exited 1, as for a regression, so a CI
job could not tell "the model got slower" from "this runner lacks its sources". pytest's own statuses
are 0-5 (3 is its internal error), so et-hil's is the next free one, ENVIRONMENT_EXIT.

The rule: when every failed test failed on an EnvironmentFault, the session exits ENVIRONMENT_EXIT; when any
other test failed too (a regression, an assertion), it exits 1 as before, the environment's failures listed
beside. Each test's report carries the mark (REPORT_ATTR), which pytest-xdist takes from a worker to the
controller like every report attribute, so `-n 2` ends the same way.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

import pytest

from hil.base.errors import EnvironmentFault

ENVIRONMENT_EXIT = 6
REPORT_ATTR = "hil_environment_fault"
SECTION = "hil: tests that could not run on this machine"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, Any, None]:
    outcome = yield
    report = outcome.get_result()
    excinfo = call.excinfo
    if report.failed and excinfo is not None and excinfo.errisinstance(EnvironmentFault):
        setattr(report, REPORT_ATTR, str(excinfo.value))


class EnvironmentExit:
    """A plugin, registered per session: counts the failed tests by kind as reports arrive and sets the exit."""

    def __init__(self) -> None:
        self.environment: dict[str, str] = {}
        self.others: set[str] = set()

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if not report.failed:
            return
        said = getattr(report, REPORT_ATTR, None)
        if said is not None:
            self.environment[report.nodeid] = said
        else:
            self.others.add(report.nodeid)

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        if self.environment and not (self.others - set(self.environment)) and exitstatus == pytest.ExitCode.TESTS_FAILED:
            session.exitstatus = ENVIRONMENT_EXIT

    def pytest_terminal_summary(self, terminalreporter: "pytest.TerminalReporter") -> None:
        if not self.environment:
            return
        terminalreporter.write_sep("=", SECTION, red=True)
        for nodeid, said in self.environment.items():
            terminalreporter.write_line(f"{nodeid}: {said}")
        if not (self.others - set(self.environment)):
            terminalreporter.write_line(f"exit status {ENVIRONMENT_EXIT}: no test failed for another reason")
