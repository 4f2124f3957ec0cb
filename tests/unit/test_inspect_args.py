"""`hil inspect`'s arguments before any framework import: the help a user reads, and each refusal's one line.

Truths: the help page and the messages are written out by hand below (what a user of `hil inspect` must
see); the files are made in the test's own folder.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

import pytest

from hil.cli.inspect_args import add_arguments, check, precheck
from hil.base.errors import AnalysisError, FileContentError, InputError

REPO = Path(__file__).resolve().parents[2]
HELP = """\
usage: hil inspect [--etrecord FILE] [--pte FILE] [--board-config FILE | --clock-mhz MHZ | --ns] [--json] [--no-verify] RUN_OR_ETDUMP

positional arguments:
  RUN_OR_ETDUMP         a run folder, or an ETDump file (then --etrecord)

options:
  --etrecord FILE       the ETRecord of an ETDump file
  --pte FILE            the model.pte of an ETDump file (checked against the ETRecord)
  --board-config FILE, --hil-board-config FILE
                        board file: its clock, for tick-based dumps
  --clock-mhz MHZ, --hil-clock-mhz MHZ
                        the ticks are core cycles at this clock
  --ns                  the timestamps are nanoseconds (the host runtime's)
  --json                print profile JSON instead of the table
  --no-verify           read a run folder's files without checking them against its manifest (a warning says so)
"""


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="hil inspect", add_help=False)
    add_arguments(parser)
    return parser


def test_the_help_page_names_every_option_its_value_and_what_it_is_for(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("COLUMNS", "200")  # argparse wraps at the terminal's width
    assert _parser().format_help() == HELP


def test_the_options_parse_to_paths_numbers_and_flags():
    args = _parser().parse_args(["d.etdump", "--etrecord", "r.bin", "--pte", "m.pte", "--hil-clock-mhz", "250",
                                 "--json", "--no-verify"])
    assert vars(args) == dict(path=Path("d.etdump"), etrecord=Path("r.bin"), pte=Path("m.pte"), board_config=None,
                              clock_mhz=250.0, ns=False, json=True, no_verify=True)
    assert isinstance(args.clock_mhz, float)
    bare = _parser().parse_args(["run", "--hil-board-config", "b.toml"])
    assert vars(bare) == dict(path=Path("run"), etrecord=None, pte=None, board_config=Path("b.toml"), clock_mhz=None,
                              ns=False, json=False, no_verify=False)
    assert _parser().parse_args(["run", "--ns"]).ns is True
    for two_clocks in (["--ns", "--clock-mhz", "1"], ["--board-config", "b", "--ns"], ["--clock-mhz", "1", "--board-config", "b"]):
        with pytest.raises(SystemExit):
            _parser().parse_args(["run", *two_clocks])


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    run = tmp_path / "run"
    run.mkdir()
    made = {"run": run, "dump": tmp_path / "trace.etdump", "record": tmp_path / "etrecord.bin",
            "pte": tmp_path / "model.pte", "board": tmp_path / "board.toml"}
    made["board"].write_bytes(b"x")
    made["dump"].write_bytes(b"\x18\x00\x00\x00\x0c\x00\x00\x00ED00" + bytes(12))  # size, root offset, "ED00"
    made["pte"].write_bytes(b"\x1c\x00\x00\x00ET12" + bytes(24))  # root offset, then the program schema's "ET12"
    made["record"].write_bytes(b"PK\x03\x04" + bytes(26))  # a zip's local file header signature
    made["serial"] = tmp_path / "serial.log"
    made["serial"].write_bytes(b"hil:boot ok\r\nhil:etdump ready\r\n")
    made["empty"] = tmp_path / "empty.bin"
    made["empty"].write_bytes(b"")
    made["missing"] = tmp_path / "nope"
    return made


def _checked(*argv: str) -> None:
    check(_parser().parse_args(list(argv)))


def test_arguments_that_can_work_pass(files: dict[str, Path]):
    _checked(str(files["run"]))
    _checked(str(files["run"]), "--etrecord", str(files["missing"]))  # a run folder brings its own ETRecord
    _checked(str(files["dump"]), "--etrecord", str(files["record"]), "--pte", str(files["pte"]), "--board-config",
             str(files["board"]))
    _checked(str(files["dump"]), "--etrecord", str(files["record"]), "--clock-mhz", "0.5")
    precheck([str(files["dump"]), "--etrecord", str(files["record"]), "--drift-snr-db", "30"])  # other options: the CLI's


@pytest.mark.parametrize("argv, error, line", [
    (["{missing}"], InputError, "{missing}: no such run folder or ETDump file"),
    (["{dump}"], AnalysisError, "{dump} is a file: give its ETRecord with --etrecord (or pass a run folder)"),
    (["{dump}", "--etrecord", "{missing}"], InputError, "ETRecord {missing}: no such file"),
    (["{dump}", "--etrecord", "{run}"], InputError, "ETRecord {run} is a folder, not a file"),
    (["{run}", "--pte", "{missing}"], InputError, "--pte {missing}: no such file"),
    (["{dump}", "--etrecord", "{record}", "--pte", "{run}"], InputError, "--pte {run} is a folder, not a file"),
    (["{run}", "--board-config", "{missing}"], InputError, "board file {missing}: no such file"),
    (["{run}", "--clock-mhz", "0"], InputError, "--clock-mhz must be greater than 0, not 0.0"),
    (["{run}", "--clock-mhz", "-200"], InputError, "--clock-mhz must be greater than 0, not -200.0"),
    (["{run}", "--clock-mhz", "nan"], InputError, "--clock-mhz must be a finite number, not nan"),
    (["{missing}", "--clock-mhz", "inf"], InputError, "--clock-mhz must be a finite number, not inf"),  # the clock first
    (["{run}", "--pte", "{serial}"], FileContentError,
     "{serial} is not an ExecuTorch program (.pte): file identifier b'boot' at offset 4, not b'ET12'"),
    (["{run}", "--pte", "{empty}"], FileContentError,
     "{empty} is not an ExecuTorch program (.pte): only 0 bytes, not b'ET12'"),
    (["{dump}", "--etrecord", "{serial}"], FileContentError,
     "ETRecord {serial} is not an ETRecord (a zip file): it starts with b'hil:'"),
    (["{dump}", "--etrecord", "{empty}"], FileContentError, "ETRecord {empty} is not an ETRecord (a zip file): an empty file"),
    (["{serial}", "--etrecord", "{record}"], FileContentError,  # "hil:" 0-3, "boot" 4-7, " ok\r" 8-11
     "{serial} is not an ETDump (a size-prefixed flatbuffer): file identifier b' ok\\r' at offset 8, not b'ED00'"),
    (["{pte}", "--etrecord", "{record}"], FileContentError,  # a .pte's "ET12" sits at 4; at 8 its zeros
     "{pte} is not an ETDump (a size-prefixed flatbuffer): file identifier b'\\x00\\x00\\x00\\x00' at offset 8,"
     " not b'ED00'"),
    (["{empty}", "--etrecord", "{record}"], FileContentError,
     "{empty} is not an ETDump (a size-prefixed flatbuffer): only 0 bytes, not b'ED00'"),
    (["{dump}", "--etrecord", "{serial}", "--pte", "{serial}"], FileContentError,  # the --pte is named first
     "{serial} is not an ExecuTorch program (.pte): file identifier b'boot' at offset 4, not b'ET12'"),
])
def test_each_refusal_is_one_line_naming_the_argument(files: dict[str, Path], argv: list[str], error: type, line: str):
    given = [word.format(**files) for word in argv]
    with pytest.raises(error) as refused:
        precheck(given)
    assert type(refused.value) is error
    assert str(refused.value) == line.format(**files)
    with pytest.raises(error):
        _checked(*given)



def test_hil_inspect_refuses_a_pte_that_is_none_before_importing_executorch(files: dict[str, Path]):
    """`hil inspect --pte serial.log` took 14.6 s to refuse (issue 32): the refusal comes before the import."""
    code = ("import sys\nfrom hil.cli.main import main\nstatus = main(['inspect', sys.argv[1], '--pte', sys.argv[2]])\n"
            "print(status, 'executorch' in sys.modules, 'torch' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code, str(files["run"]), str(files["serial"])], capture_output=True,
                          text=True, timeout=120, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert done.stdout.split() == ["2", "False", "False"], done.stderr
    assert done.stderr.splitlines() == [f"hil inspect: {files['serial']} is not an ExecuTorch program (.pte): "
                                        "file identifier b'boot' at offset 4, not b'ET12'"]
