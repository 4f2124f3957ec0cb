"""`hil inspect`'s arguments, and the checks that need no framework: run before executorch is imported.

Why: the command loads executorch's Inspector first (hil.cli.main: large ETDumps then cost no extra
system time), which takes seconds, more on a cold disk; every refusal of a path that does not
exist used to wait for it, and `hil inspect /nope` said "/nope is a file". These checks name each
missing file or folder at once; what the files hold is the readers' to judge (hil.analysis).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from hil.base.errors import AnalysisError, FileContentError, InputError
from hil.base.checks import finite_number
from hil.records.validate import etdump
from hil.records.validate.pte import IDENTIFIER_AT, PTE_IDENTIFIER, check_pte_bytes

# ExecuTorch writes an ETRecord with zipfile.ZipFile (devtools/etrecord/_etrecord.py): a zip's first
# local file header starts with these bytes (APPNOTE.TXT 4.3.7).
ZIP_MAGIC = b"PK\x03\x04"


def add_arguments(inspect: argparse.ArgumentParser) -> None:
    inspect.add_argument("path", type=Path, metavar="RUN_OR_ETDUMP",
                         help="a run folder, or an ETDump file (then --etrecord)")
    inspect.add_argument("--etrecord", type=Path, default=None, metavar="FILE", help="the ETRecord of an ETDump file")
    inspect.add_argument("--pte", type=Path, default=None, metavar="FILE",
                         help="the model.pte of an ETDump file (checked against the ETRecord)")
    clock = inspect.add_mutually_exclusive_group()
    clock.add_argument("--board-config", "--hil-board-config", type=Path, default=None, metavar="FILE",
                       help="board file: its clock, for tick-based dumps")
    clock.add_argument("--clock-mhz", "--hil-clock-mhz", type=float, default=None, metavar="MHZ",
                       help="the ticks are core cycles at this clock")
    clock.add_argument("--ns", action="store_true", help="the timestamps are nanoseconds (the host runtime's)")
    inspect.add_argument("--json", action="store_true", help="print profile JSON instead of the table")
    inspect.add_argument("--no-verify", action="store_true",
                         help="read a run folder's files without checking them against its manifest (a warning says so)")


def _file(path: Path | None, what: str) -> None:
    if path is None:
        return
    if not path.exists():
        raise InputError(f"{what} {path}: no such file")
    if not path.is_file():
        raise InputError(f"{what} {path} is a folder, not a file")


def _head(path: Path, size: int) -> bytes:
    try:
        with path.open("rb") as file:
            return file.read(size)
    except OSError as exc:
        raise InputError(f"{path}: cannot be read: {exc.strerror or exc}") from exc


def _magic(args: argparse.Namespace, is_dir: bool) -> None:
    """A bare dump that is no ETDump, a --pte that is no ExecuTorch program and an ETRecord that is no zip,
    named before the import.

    `hil inspect --pte serial.log` was refused by the ET12 check only after executorch's import (14.6 s,
    issue 32): the identifiers are a few bytes each, read here."""
    if not is_dir:
        etdump.check_etdump_bytes(_head(Path(args.path), etdump.HEAD_BYTES), args.path)
    if args.pte is not None:
        check_pte_bytes(_head(args.pte, IDENTIFIER_AT + len(PTE_IDENTIFIER)), args.pte)
    if args.etrecord is not None and not is_dir:
        head = _head(args.etrecord, len(ZIP_MAGIC))
        if head != ZIP_MAGIC:
            what = f"it starts with {head!r}" if head else "an empty file"
            raise FileContentError(f"ETRecord {args.etrecord} is not an ETRecord (a zip file): {what}")


def check(args: argparse.Namespace) -> None:
    """InputError (one line, naming the path) for arguments that cannot work, whatever the files hold."""
    if args.clock_mhz is not None:  # 0, negative or nan would give nan times
        finite_number(args.clock_mhz, "--clock-mhz", above=0)
    path = Path(args.path)
    if not path.exists():
        raise InputError(f"{path}: no such run folder or ETDump file")
    if not path.is_dir() and args.etrecord is None:
        raise AnalysisError(f"{path} is a file: give its ETRecord with --etrecord (or pass a run folder)")
    _file(args.etrecord if not path.is_dir() else None, "ETRecord")
    _file(args.pte, "--pte")
    _file(args.board_config, "board file")
    _magic(args, path.is_dir())


def precheck(argv: list[str]) -> None:
    """Parse `hil inspect ...` alone and check it (argparse itself exits 2 on a usage error)."""
    parser = argparse.ArgumentParser(prog="hil inspect", add_help=False)
    add_arguments(parser)
    known, _ = parser.parse_known_args(argv)
    check(known)
