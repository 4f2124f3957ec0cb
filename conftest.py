"""Repository-level pytest set-up. The et-hil plugin itself is loaded through its `pytest11` entry point."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

# The test suite keeps its own cache inside the checkout (gitignored), so a fresh clone starts cold
# and a user's cache never hides a broken export.
os.environ.setdefault("HIL_CACHE_DIR", str(Path(__file__).resolve().parent / ".hil-cache"))

# The folders whose tests drive the emulated board, build firmware or run `hil` end to end.
_BOARD_FOLDERS = ("tests/device/", "tests/system/")


@pytest.hookimpl(tryfirst=True)
def pytest_xdist_make_scheduler(config, log):
    """`make test` (`-n 2 --dist loadgroup`): every board test on one worker, one after another in their file
    order, and the unit tests on the other core meanwhile, one by one.

    Why not spread the board tests too: they share the runtime build, the export cache and session fixtures
    built once per worker, some damage and repair shared cache entries on purpose, and a QEMU session beside
    another one on 2 cores gains little (bench/parallel_suite.py). The groups are decided here, by folder:
    xdist 3.8's loadgroup reads `xdist_group` marks into the node ids it schedules by, and under pytest 9.2
    that renaming no longer reaches `item.nodeid` (seen: every marked test was its own unit, on either worker).
    Any other `--dist` is xdist's own.
    """
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class BoardTestsTogether(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return "board tests" if nodeid.startswith(_BOARD_FOLDERS) else nodeid

    return BoardTestsTogether(config, log)


def pytest_sessionfinish(session, exitstatus):
    """Every profile.json the session's runs wrote reads back and writes again byte for byte.

    The files the harness wrote (laid out as hil.base.atomic.write_json lays them out) must come back from
    `Profile.from_json(...).to_json()` unchanged; files a test wrote its own way are not the harness's
    and are left alone. A difference fails the session, naming the file.
    """
    import json

    factory = getattr(session.config, "_tmp_path_factory", None)
    try:
        base = factory.getbasetemp() if factory is not None else None
    except (OSError, ValueError):
        base = None
    if base is None or not Path(base).is_dir():
        return
    from hil.records.profile_model import Profile

    broken = []
    for path in sorted(Path(base).rglob("profile.json")):
        raw = path.read_bytes()
        try:
            data = json.loads(raw)
        except ValueError:
            continue
        if not isinstance(data, dict) or (json.dumps(data, indent=2) + "\n").encode() != raw:
            continue
        if (json.dumps(Profile.from_json(data).to_json(), indent=2) + "\n").encode() != raw:
            broken.append(str(path))
    if broken:
        session.config.get_terminal_writer().line(
            "profile.json that Profile does not write back byte for byte:\n  " + "\n  ".join(broken), red=True)
        session.exitstatus = 1
