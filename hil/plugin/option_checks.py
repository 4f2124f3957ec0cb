"""Every value the plugin's options take, checked when the session starts: one line each, pytest's usage error.

Why: checked where it is used, a bad value surfaced late and in many shapes: `--hil-iterations 0` failed each
test after its export, `--hil-history bad/afile/history.db` (a parent that is a file) ended the session in an
INTERNALERROR traceback after every test had run, and a history path that is a folder failed each test with
SQLite's "unable to open database file". Here each is refused before any test runs, naming the option (or the
environment variable, or the ini file and key, when the value came from there: hil.plugin.settings) and what
it must be, with exit status 4 (pytest's usage error) and nothing exported.

A test's own value (`hil_profile(model, iterations=3)`) wins over the option, as an argument beats a default;
it is checked by the run itself (hil.run.request), before its export. A bad option is refused all the same,
even in a session whose tests all pass their own: an option nobody can use is a mistake, never ignored.
The regression side's numbers (tolerance, warm-up, ...) are checked by hil.plugin.regress_hooks.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from hil.base.checks import finite_number, whole_number
from hil.base.errors import FileContentError, HilError, InputError
from hil.plugin.settings import ORIGINS


def _where(config: pytest.Config, dest: str, flag: str) -> str:
    """The option as the user gave it: its flag, or the variable / ini key its value came from."""
    origin = config.stash.get(ORIGINS, {}).get(dest, "")
    return flag if not origin or origin.startswith("command line") else origin


def _whole(at_least: int) -> Callable[[Any, str], None]:
    def check(value: Any, name: str) -> None:
        whole_number(value, name, at_least=at_least)

    return check


def _number(**bounds: float) -> Callable[[Any, str], None]:
    def check(value: Any, name: str) -> None:
        finite_number(value, name, **bounds)

    return check


def _text(value: Any, name: str) -> None:
    if not str(value).strip():
        raise InputError(f"{name} is empty")


def _first_existing(path: Path) -> Path:
    """`path` or its nearest ancestor that exists (where making the missing folders would start)."""
    while not path.exists() and path != path.parent:
        path = path.parent
    return path


def _writable_parent(path: Path, name: str) -> None:
    """The folders up to `path` exist or can be made: no file stands where one of them must be."""
    found = _first_existing(path.parent)
    if not found.is_dir():
        raise InputError(f"{name} {path}: {found} is a file, so no folder can be made there")


def output_file(value: Any, name: str) -> None:
    """A file the session writes (`--hil-openmetrics`): not a folder, its folder makeable."""
    path = Path(value)
    if path.is_dir():
        raise InputError(f"{name} {path}: is a folder; name a file (for example {path / 'metrics.txt'})")
    _writable_parent(path, name)


def history_file(value: Any, name: str) -> None:
    """The history database: not a folder, its folder makeable, and an existing file an SQLite database."""
    from hil.records.validate.files import read_head
    from hil.records.validate.history import SQLITE_HEADER, check_header

    path = Path(value)
    if path.is_dir():
        raise InputError(f"{name} {path}: is a folder; name the database file (for example {path / 'history.db'})")
    _writable_parent(path, name)
    if path.is_file():
        try:
            check_header(read_head(path, len(SQLITE_HEADER)), path)
        except FileContentError as exc:
            raise InputError(f"{name}: {exc}") from None


def output_folder(value: Any, name: str) -> None:
    """A folder the session writes into (`--hil-artifacts`): not a file, makeable."""
    path = Path(value)
    found = _first_existing(path)
    if not found.is_dir():
        raise InputError(f"{name} {path}: {found} is a file, not a folder")


def input_file(value: Any, name: str) -> None:
    path = Path(value)
    if not path.is_file():
        raise InputError(f"{name} {path}: " + ("is a folder, not a file" if path.is_dir() else "no such file"))


def input_path(value: Any, name: str) -> None:
    if not Path(value).exists():
        raise InputError(f"{name} {value}: no such file or folder")


# dest -> (flag, check). Every option with a value the main plugin, the regression side and the lab register;
# those not here are checked where they are parsed (--hil-firmware, --hil-tolerance: their argparse type; the
# regression side's numbers and --hil-baseline: hil.plugin.regress_hooks).
CHECKS: dict[str, tuple[str, Callable[[Any, str], None]]] = {
    "board": ("--board", _text),
    "board_config": ("--hil-board-config", input_file),
    "hil_artifacts": ("--hil-artifacts", output_folder),
    "hil_iterations": ("--hil-iterations", _whole(1)),
    "hil_timeout": ("--hil-timeout", _number(above=0)),
    "hil_drift_snr_db": ("--hil-drift-snr-db", _number()),
    "hil_inputs": ("--hil-inputs", input_file),
    "hil_calibration": ("--hil-calibration", input_file),
    "hil_history": ("--hil-history", history_file),
    "hil_budgets": ("--hil-budgets", input_path),
    "hil_openmetrics": ("--hil-openmetrics", output_file),
    "hil_clock_mhz": ("--hil-clock-mhz", _number(above=0)),
    "hil_gdb": ("--hil-gdb", _text),
    "hil_breakpoint": ("--hil-breakpoint", _text),
    "hil_result_expr": ("--hil-result-expr", _text),
    "hil_probe": ("--hil-probe", _text),
    "hil_target": ("--hil-target", _text),
    "hil_pack": ("--hil-pack", input_file),
    "hil_swd_frequency": ("--hil-swd-frequency", _whole(1)),
    "hil_port": ("--hil-port", _text),
    "hil_baudrate": ("--hil-baudrate", _whole(1)),
    "hil_elf": ("--hil-elf", input_file),
    "hil_place": ("--hil-place", _text),
    "hil_place_timeout": ("--hil-place-timeout", _number(at_least=0)),
    "hil_coordinator": ("--hil-coordinator", _text),
    "hil_lab": ("--hil-lab", input_file),
    "hil_lab_tags": ("--hil-lab-tags", _text),
}


def check_session_options(config: pytest.Config) -> None:
    """Refuse the first option value outside its rule: pytest.UsageError (exit 4), one line naming it."""
    for dest, (flag, check) in CHECKS.items():
        value = getattr(config.option, dest, None)
        if value is None:
            continue
        try:
            check(value, _where(config, dest, flag))
        except HilError as exc:
            raise pytest.UsageError(str(exc)) from None
    from hil.plugin import boards

    try:  # the board file the options name, with the overrides applied (a bad [qemu].firmware, say)
        boards.load(config)
    except HilError as exc:
        raise pytest.UsageError(str(exc)) from None
