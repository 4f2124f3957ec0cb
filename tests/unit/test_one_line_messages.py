"""Each refusal is one line on stderr with the documented exit code (docs/command-line.md: input 2).

The cases: a corrupt ETDump (flatc's usage text held back), an ETRecord holding a pickled object (torch's
advice to load it unsafely left out), a breakpoint, result expression or QEMU machine that cannot be one
word of gdb's or QEMU's command (input, not infrastructure), and the inspection of a run that was killed
before it wrote its ETDump (its manifest says so). The too-small ETDump buffer: test_etdump_bound.py.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import torch

from test_analysis import art  # noqa: F401  (the analysis tests' host-runtime program: dump, record, .pte)

REPO = Path(__file__).resolve().parents[2]


class Planted:
    """A class no ETRecord may hold: torch.load(weights_only=True) refuses its global."""


def _hil(*args: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "hil.cli.main", *map(str, args)], cwd=REPO, capture_output=True,
                          text=True, timeout=180, env=os.environ.copy())


def _one_line(done: subprocess.CompletedProcess[str], code: int) -> str:
    assert done.returncode == code, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and done.stdout.strip() == "", (done.stdout, done.stderr)
    return lines[0]


def test_a_corrupt_etdump_is_one_line_quoting_flatc_without_its_usage(art, tmp_path: Path) -> None:  # noqa: F811
    dump = bytearray((art["out"] / "tiny.etdump").read_bytes())
    name = dump.index(b"Method::execute")
    dump[name + 6] = 0xFF  # an event name that is no UTF-8: flatc cannot print it as JSON
    bad = tmp_path / "bad.etdump"
    bad.write_bytes(bytes(dump))
    line = _one_line(_hil("inspect", bad, "--etrecord", art["out"] / "tiny.etrecord"), 2)
    assert line == (f"hil inspect: the Inspector cannot decode ETDump {bad} with ETRecord {art['out'] / 'tiny.etrecord'}:"
                    " CalledProcessError: flatc ended with status 1 (flatc: Unable to generate text for schema (string"
                    " contains non-utf8 bytes))")


def test_a_pickled_etrecord_is_refused_without_the_advice_to_load_it_unsafely(art, tmp_path: Path) -> None:  # noqa: F811
    source = zipfile.ZipFile(art["out"] / "tiny.etrecord")
    planted = io.BytesIO()
    torch.save({"weight": Planted()}, planted)
    bad = tmp_path / "pickled.etrecord"
    slot = "edge_dialect_exported_program/forward_state_dict"
    with zipfile.ZipFile(bad, "w") as out:
        for entry in source.namelist():
            out.writestr(entry, planted.getvalue() if entry == slot else source.read(entry))
    line = _one_line(_hil("inspect", art["out"] / "tiny.etdump", "--etrecord", bad), 2)
    assert line == (f"hil inspect: cannot read ETRecord {bad}: UnpicklingError: WeightsUnpickler error: Unsupported"
                    f" global: GLOBAL {__name__}.Planted was not an allowed global by default.")


@pytest.mark.parametrize(("option", "value", "key", "expected"), [
    ("--breakpoint", "main; shell touch x", "[debug].breakpoint",
     "FUNCTION or file.c:LINE (an identifier, or a file name and a line number)"),
    ("--result-expr", "result)\n-gdb-exit", "[debug].result_expr",
     "an identifier, with .member or ->member parts (the struct holding .buf and .size)"),
])
def test_a_breakpoint_or_result_that_is_no_identifier_is_an_input_error(
        tmp_path: Path, option: str, value: str, key: str, expected: str) -> None:
    line = _one_line(_hil("run", "--board", "qemu", "--model", "cifar10", "--out", tmp_path / "run", option, value), 2)
    assert line == (f"hil run: board 'qemu' ({REPO / 'boards' / 'qemu.toml'}) with command-line overrides: {key} must"
                    f" be {expected}, not {value!r}")
    assert not (tmp_path / "run").exists()


def test_a_qemu_machine_with_a_blank_is_an_input_error(tmp_path: Path) -> None:
    board = tmp_path / "qemu.toml"
    board.write_text('[board]\nextends = "qemu"\nname = "spaced"\n[qemu]\nmachine = "mps2-an505 -sandbox off"\n')
    line = _one_line(_hil("run", "--board-config", board, "--model", "cifar10", "--out", tmp_path / "run"), 2)
    assert line == (f"hil run: board file {board}: [qemu].machine must be a QEMU machine name, with its ,property=value"
                    " parts, and no blank, not 'mps2-an505 -sandbox off'")


def test_inspecting_a_killed_run_says_it_was_interrupted(art, tmp_path: Path) -> None:  # noqa: F811
    folder = tmp_path / "killed"
    folder.mkdir()
    record = (art["out"] / "tiny.etrecord").read_bytes()
    (folder / "etrecord.bin").write_bytes(record)
    # What a run killed by SIGTERM after its export left: its manifest, written on the way out, no trace.etdump.
    (folder / "manifest.json").write_text(json.dumps({
        "board": "qemu", "model": "tiny", "status": "failed", "error": "interrupted by SIGTERM",
        "error_kind": "interrupted",
        "files": {"etrecord.bin": {"sha256": hashlib.sha256(record).hexdigest(), "size": len(record)}}}))
    for extra in ((), ("--no-verify",)):
        line = _one_line(_hil("inspect", folder, *extra), 2)
        assert line == (f"hil inspect: {folder}: the run was interrupted before it wrote its ETDump (interrupted by"
                        " SIGTERM, as its manifest.json records), so there is nothing to inspect")
