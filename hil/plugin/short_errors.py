"""A test that fails on a harness error shows that error's one line, not a traceback through the harness.

Why: every HilError is written as one line that names the file, board or key at fault and what to do
(a missing RT700 image: the command that builds it). Shown with pytest's traceback, that line came
last, after pages of the harness's own source, which the user did not write and cannot act on. The
report keeps where the user's test called the harness (its file and line) and the error's line.
The exception itself is untouched, so `pytest.raises(HilError)` in a user's test works as before.
"""

from __future__ import annotations

from collections.abc import Generator
from pathlib import Path
from typing import Any

import pytest

from hil.base.errors import HilError


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, Any, None]:
    outcome = yield
    report = outcome.get_result()
    excinfo = call.excinfo
    if excinfo is None or not report.failed or not excinfo.errisinstance(HilError):
        return
    where = _callers_line(item, excinfo)
    report.longrepr = f"{where}{type(excinfo.value).__name__}: {excinfo.value}"


def _callers_line(item: pytest.Item, excinfo: pytest.ExceptionInfo[BaseException]) -> str:
    """`file:line: ` of the last frame in the test's own file (where it called the harness), or ""."""
    own = Path(str(item.path)).resolve()
    found = ""
    for entry in excinfo.traceback:
        if Path(str(entry.path)).resolve() == own:
            found = f"{entry.path}:{entry.lineno + 1}: "
    return found
