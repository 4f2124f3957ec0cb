"""A run folder's files are checked against what the run recorded before anything is read from them.

`manifest.json` lists every file of the run with its sha256, and (since the firmware prints one) the
CRC-32 of the ETDump as the board computed it. One flipped bit in trace.etdump moved a delegate
call by 7 us, one changed digit in serial.log's clock line moved `Method::execute` from 1416 to
3349 us, and the analysis cannot tell: such a dump still decodes. So `hil inspect RUN_DIR` re-hashes
the files the analysis reads, and re-computes the ETDump's CRC-32 against the board's, first; a
mismatch is an EvidenceError (exit 3) naming the file. `--no-verify` skips the check and says so.

The regression side (`hil compare`, `hil trace`, `hil baseline update`, the pytest gate) reads a run
folder's profile.json and serial.log: `verify_read` checks each against the manifest first, and a
mismatch there is a ChangedFile (a damaged input, exit 2), naming the file and both sha256s. A file a
sealed manifest (hil.records.manifest_seal) does not list is refused too; an older manifest that does
not list it leaves it unverified, as before.
"""

from __future__ import annotations

import zlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from hil.base.errors import FileContentError, HilError
from hil.records.manifest import MANIFEST_NAME, Manifest, sha256_file
from hil.records.manifest_seal import is_sealed

# What the analysis of a run folder reads (hil.cli.inspect_cmd), where present, and the profile.json it gives
# again: a folder whose profile changed since the run is refused by `hil inspect` as by `hil compare`.
ANALYSED = ("trace.etdump", "etrecord.bin", "model.pte", "serial.log", "simulation.json", "debug.bin", "profile.json")


class EvidenceError(HilError):
    """A run folder's file differs from what its manifest (or the board's CRC-32) recorded."""


class ChangedFile(FileContentError):
    """A file the regression side reads differs from its manifest's record of it (exit status 2)."""


def mismatch(path: Path, entry: Mapping[str, Any], where: Path) -> str:
    """What differs between the file `path` and its manifest `entry`, or "": the sha256s first (a changed file
    is named with both), then the size (a manifest whose size alone changed: its own record is wrong)."""
    actual = sha256_file(path)
    if actual != entry.get("sha256"):
        return f"{path}: sha256 {actual} differs from the {entry.get('sha256')} {where} records: the file changed after the run"
    recorded, size = entry.get("size"), path.stat().st_size
    if recorded is not None and recorded != size:  # checked with the sha256: a manifest's size is evidence too
        return f"{path}: {size} bytes, but {where} says {recorded}: the file or its manifest changed after the run"
    return ""


def verify_read(folder: Path, manifest: Manifest | Mapping[str, Any], name: str) -> None:
    """Before the regression side reads `folder/name`: ChangedFile when it differs from the manifest's record,
    or is absent from a sealed manifest's list; an older manifest that does not list it leaves it unverified."""
    folder, manifest = Path(folder), Manifest.from_json(manifest)
    path, where = folder / name, folder / MANIFEST_NAME
    entry = manifest.files.get(name)
    if entry is None:
        if is_sealed(manifest):
            raise ChangedFile(f"{path}: not listed in {where}, so it cannot be verified: not the run's file")
        return
    problem = mismatch(path, entry, where)
    if problem:
        raise ChangedFile(problem)


def _crc32(path: Path) -> str:
    crc = 0
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            crc = zlib.crc32(block, crc)
    return f"0x{crc:08x}"


def verify_run_folder(folder: Path, manifest: Manifest | Mapping[str, Any]) -> list[str]:
    """Raise EvidenceError naming the first file that does not match; return the names verified."""
    folder = Path(folder)
    manifest = Manifest.from_json(manifest)
    listed = manifest.files
    where = folder / MANIFEST_NAME
    checked = []
    for name in ANALYSED:
        path = folder / name
        entry = listed.get(name)
        if entry is None:
            if path.is_file():
                raise EvidenceError(f"{path}: not listed in {where}, so it cannot be verified (--no-verify to read it anyway)")
            continue
        if not path.is_file():
            raise EvidenceError(f"{path}: listed in {where} but missing")
        problem = mismatch(path, entry, where)
        if problem:
            raise EvidenceError(problem)
        checked.append(name)
    board_crc = manifest.board_crc32
    dump = folder / "trace.etdump"
    if board_crc and dump.is_file() and _crc32(dump) != str(board_crc).lower():
        raise EvidenceError(f"{dump}: CRC-32 {_crc32(dump)} differs from the {board_crc} the board printed for its ETDump")
    return checked
