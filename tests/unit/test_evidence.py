"""`hil inspect RUN_DIR` re-checks the run's files first: one flipped bit in the ETDump, one changed digit in
the console's clock line, a file the manifest never listed, and an ETDump whose CRC-32 is not the board's
are exit 3 naming the file; `--no-verify` reads them anyway and says so. Digests computed here with hashlib
and zlib."""

from __future__ import annotations

import contextlib
import io
import json
import zlib
from pathlib import Path

from hil.cli.main import main
from test_inspect_cmd import listing, run_folder  # noqa: F401  (the fixture)


def _inspect(*args: object) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["inspect", *map(str, args)])
    return code, out.getvalue(), err.getvalue()


def _rewrite_manifest(folder: Path, **changes: object) -> None:
    manifest = json.loads((folder / "manifest.json").read_text())
    manifest.update(changes)
    (folder / "manifest.json").write_text(json.dumps(manifest))


def test_an_untouched_run_folder_is_read(run_folder: Path):
    crc = f"0x{zlib.crc32((run_folder / 'trace.etdump').read_bytes()):08x}"
    _rewrite_manifest(run_folder, etdump_crc32={"checked": True, "firmware": crc, "read": crc})
    code, out, err = _inspect(run_folder, "--json")
    assert code == 0 and err == "" and not any("not verified" in w for w in json.loads(out)["warnings"])


def test_one_flipped_bit_in_the_etdump_is_exit_3_naming_it(run_folder: Path):
    dump = run_folder / "trace.etdump"
    data = bytearray(dump.read_bytes())
    data[391] ^= 0x04
    dump.write_bytes(bytes(data))
    code, out, err = _inspect(run_folder)
    assert code == 3 and out == ""
    (line,) = err.splitlines()
    assert line.startswith(f"hil inspect: {dump}: sha256 ") and "the file changed after the run" in line


def test_a_changed_digit_in_the_consoles_clock_line_is_caught(run_folder: Path):
    log = run_folder / "serial.log"
    log.write_text("Core/NPU Frequency: 324 MHz\r\n")
    _rewrite_manifest(run_folder, files=listing(run_folder))
    first = _inspect(run_folder)
    assert first[0] == 0, first[2]
    log.write_text("Core/NPU Frequency: 724 MHz\r\n")
    code, _, err = _inspect(run_folder)
    assert code == 3 and err.startswith(f"hil inspect: {log}: sha256 ")
    code, out, err = _inspect(run_folder, "--no-verify", "--json")
    assert code == 0 and json.loads(out)["warnings"][0] == (
        f"{run_folder}: files not verified against manifest.json (--no-verify): the figures may not be the run's")
    code, out, _ = _inspect(run_folder, "--no-verify")
    assert code == 0 and "files not verified against manifest.json (--no-verify)" in " ".join(out.split())  # the table too


def test_a_file_the_manifest_never_listed_cannot_be_verified(run_folder: Path):
    (run_folder / "simulation.json").write_text(json.dumps({"clock_mhz": 500}))
    code, _, err = _inspect(run_folder)
    assert code == 3 and err.splitlines() == [
        f"hil inspect: {run_folder / 'simulation.json'}: not listed in {run_folder / 'manifest.json'}, so it cannot be "
        "verified (--no-verify to read it anyway)"]


def test_a_rehashed_manifest_does_not_hide_an_etdump_the_board_never_sent(run_folder: Path):
    dump = run_folder / "trace.etdump"
    board_crc = f"0x{zlib.crc32(dump.read_bytes()):08x}"
    data = bytearray(dump.read_bytes())
    data[391] ^= 0x04
    dump.write_bytes(bytes(data))
    _rewrite_manifest(run_folder, files=listing(run_folder), etdump_crc32={"checked": True, "firmware": board_crc})
    code, _, err = _inspect(run_folder)
    assert code == 3 and err.splitlines() == [
        f"hil inspect: {dump}: CRC-32 0x{zlib.crc32(bytes(data)):08x} differs from the {board_crc} the board printed "
        "for its ETDump"]


def test_a_listed_file_that_is_gone_is_named(run_folder: Path):
    (run_folder / "model.pte").unlink()
    code, _, err = _inspect(run_folder)
    assert code == 3 and err.splitlines() == [
        f"hil inspect: {run_folder / 'model.pte'}: listed in {run_folder / 'manifest.json'} but missing"]


def test_a_manifest_whose_size_is_wrong_is_caught_with_the_sha256(run_folder: Path):
    dump = run_folder / "trace.etdump"
    files = json.loads((run_folder / "manifest.json").read_text())["files"]
    size = len(dump.read_bytes())  # counted here; the sha256 in the manifest stays the file's own
    _rewrite_manifest(run_folder, files={**files, "trace.etdump": {**files["trace.etdump"], "size": size + 1}})
    code, out, err = _inspect(run_folder)
    assert code == 3 and out == ""
    assert err.splitlines() == [f"hil inspect: {dump}: {size} bytes, but {run_folder / 'manifest.json'} says {size + 1}: "
                                "the file or its manifest changed after the run"]
