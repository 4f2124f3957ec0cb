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
# Board test files that share nothing with the others but the on-disk caches (which lock their entries): each
# runs `hil` or a pytest session of its own in a folder of its own. They run as a second group, on the worker
# the unit tests use, so that the second core is not idle once the unit tests are done. Chosen from a fresh
# clone's `--durations=0`: about half of the board tests' time (CONTRIBUTING.md, "make test").
_BESIDE_UNIT_TESTS: tuple[str, ...] = tuple(f"tests/system/{name}.py" for name in (
    "test_fault_matrix_cache",  # a private cache it damages row by row
    "test_new_project_gate",  # these six: pytest sessions of their own in a project folder of their own
    "test_nightly_regression",
    "test_parallel_sessions",
    "test_run_folders",
    "test_runtime_reads",
    "test_shared_files",
    "test_time_base_gate",
    "test_rt700_firmware_build",  # the RT700 image from the pinned SDK, in a folder of its own
    "test_rt700_emu",  # a small model's RT700 image of its own, run on the emulated RT700
    "test_rt700_emu_on_demand",  # the RT700 image the harness builds for the run, run on the emulated RT700
    "test_rt700_emu_fault",  # a UDF planted in a small model's RT700 image, run on the emulated RT700
))


def board_group(nodeid: str) -> str | None:
    """The scheduling group of a board test (None for a unit test): which worker's queue it joins."""
    if not nodeid.startswith(_BOARD_FOLDERS):
        return None
    return "board tests beside the unit tests" if nodeid.split("::", 1)[0] in _BESIDE_UNIT_TESTS else "board tests"


@pytest.hookimpl(tryfirst=True)
def pytest_xdist_make_scheduler(config, log):
    """`make test` (`-n 2 --dist loadgroup`): the board tests in two groups, each on one worker in file order,
    and the unit tests, one by one, on whichever worker is free.

    Why groups, not one test at a time: most board tests share the runtime build, the export cache and session
    fixtures built once per worker (one QEMU kept per image, hil.boards.qemu_keep), and some damage and repair
    shared cache entries on purpose; the second group holds only files that share nothing but the locked on-disk
    caches. xdist schedules the largest group first, so the first worker takes the main group and the second the
    other, then the unit tests. The groups are decided here, by file: xdist 3.8's loadgroup reads `xdist_group`
    marks into the node ids it schedules by, and under pytest 9.2 that renaming no longer reaches `item.nodeid`
    (seen: every marked test was its own unit, on either worker). Any other `--dist` is xdist's own.
    """
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class BoardTestsInTwoGroups(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return board_group(nodeid) or nodeid

    return BoardTestsInTwoGroups(config, log)


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
