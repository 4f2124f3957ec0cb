"""The QEMU runtime's static libraries, checked before each image is linked against them.

Why: the runtime build folder is compiled once per machine and then only extended; Ninja decides
what to rebuild by timestamps, so a library truncated or damaged afterwards (a full disk, a killed
copy) looked up to date and every later image failed to link, for good. Each successful build
records the size and sha256 of every static library Ninja makes (hil.base.entry_check, the record
in the runtime folder); the next build, under the folder's lock, checks them first and deletes
each library that fails. Ninja then archives it again from its objects, which costs seconds, where
rebuilding the folder would cost minutes.

The libraries are those of Ninja's own static-library rules (`ninja -t targets all`): the image's,
including the copy of ExecuTorch's flatcc runtime, but not the host tools an external project
builds, which no image links. A folder built by an older et-hil has no record: its libraries are
all archived again once (seconds), then recorded, rather than recorded as they are (an older
build is what may have left a damaged one).
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from hil.base import log
from hil.base.entry_check import RECORD_NAME, EntryRecord, file_problem, read_record, seal

NINJA_QUERY_TIMEOUT_S = 60.0
_STATIC_RULE = "_STATIC_LIBRARY_LINKER__"


def library_names(root: Path, build: Path) -> list[str]:
    """The static libraries Ninja builds in `build` that exist, as paths relative to the runtime folder `root`."""
    ninja = shutil.which("ninja")
    if ninja is None or not (build / "build.ninja").is_file():
        return []
    try:
        listed = subprocess.run([ninja, "-C", str(build), "-t", "targets", "all"], capture_output=True, text=True,
                                timeout=NINJA_QUERY_TIMEOUT_S, check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return []  # no list, no check: the build that follows says what is wrong with the folder
    names = set()
    for line in listed.splitlines():
        target, _, rule = line.rpartition(": ")
        path = (build / target).resolve()
        if _STATIC_RULE in rule and path.is_file() and path.is_relative_to(root.resolve()):
            names.add(path.relative_to(root.resolve()).as_posix())
    return sorted(names)


def repair_libraries(root: Path, build: Path) -> list[str]:
    """Delete each library of `build` that fails its check (one line naming them), so Ninja archives them
    again; returns their names. Call under the runtime folder's lock, before the build."""
    names = library_names(root, build)
    if not names:
        return []
    try:
        record = read_record(root)
    except ValueError:
        record = None  # a damaged record vouches for nothing: every library is archived again
    if record is None:
        bad = dict.fromkeys(names, f"no {RECORD_NAME} record of its libraries (or a damaged one)")
    else:
        found = {name: _problem(root, name, record) for name in names}
        bad = {name: problem for name, problem in found.items() if problem}
    for name in bad:
        (root / name).unlink(missing_ok=True)
    if bad:
        said = sorted(set(bad.values()))
        log.warning(f"cache entry {build} (QEMU runtime libraries) failed its check: {said[0]}"
                    f"{f' (and {len(said) - 1} more)' if len(said) > 1 else ''}; removed {len(bad)} "
                    f"librar{'y' if len(bad) == 1 else 'ies'}, archiving again from their objects")
    return sorted(bad)


def _problem(root: Path, name: str, record: EntryRecord) -> str:
    """What is wrong with the library `name` against the record ("" when nothing). One the record does not list
    was made by a build that did not finish (it was recorded by none)."""
    if name not in record.files:
        return f"{name} is not in its {RECORD_NAME}"
    return file_problem(root / name, name, record.files[name])


def record_libraries(root: Path, build: Path) -> None:
    """Record the libraries of a build that just succeeded."""
    seal(root, library_names(root, build))
