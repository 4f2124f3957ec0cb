"""A run folder's files are checked against what the run recorded before anything is read from them.

`manifest.json` lists every file of the run with its sha256, and (since the firmware prints one) the
CRC-32 of the ETDump as the board computed it. One flipped bit in trace.etdump moved a delegate
call by 7 us, one changed digit in serial.log's clock line moved `Method::execute` from 1416 to
3349 us, and the analysis cannot tell: such a dump still decodes. So `hil inspect RUN_DIR` re-hashes
the files the analysis reads, and re-computes the ETDump's CRC-32 against the board's, first; a
mismatch is an EvidenceError (exit 3) naming the file. `--no-verify` skips the check and says so.
"""

from __future__ import annotations

import zlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from hil.base.errors import HilError
from hil.records.manifest import MANIFEST_NAME, Manifest, sha256_file

# What the analysis of a run folder reads (hil.cli.inspect_cmd), where present.
ANALYSED = ("trace.etdump", "etrecord.bin", "model.pte", "serial.log", "simulation.json", "debug.bin")


class EvidenceError(HilError):
    """A run folder's file differs from what its manifest (or the board's CRC-32) recorded."""


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
        recorded, size = entry.get("size"), path.stat().st_size
        if recorded is not None and recorded != size:  # checked with the sha256: a manifest's size is evidence too
            raise EvidenceError(f"{path}: {size} bytes, but {where} says {recorded}: the file or its manifest changed "
                                "after the run")
        actual = sha256_file(path)
        if actual != entry.get("sha256"):
            raise EvidenceError(f"{path}: sha256 {actual[:16]}... differs from {where}'s {str(entry.get('sha256'))[:16]}...: "
                                "the file changed after the run")
        checked.append(name)
    board_crc = manifest.board_crc32
    dump = folder / "trace.etdump"
    if board_crc and dump.is_file() and _crc32(dump) != str(board_crc).lower():
        raise EvidenceError(f"{dump}: CRC-32 {_crc32(dump)} differs from the {board_crc} the board printed for its ETDump")
    return checked
