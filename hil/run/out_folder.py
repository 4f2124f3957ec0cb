"""What `--out` may name, and which files in it a run may replace.

Why: a run starts by removing the files it is about to write (serial.log, mi.log and qemu.log are
appended to, so two runs must never mix), and `hil run --out ""` (an unset `$OUT` in a CI script)
used to become the current folder, where that removal deleted a user's own model.pte. The rules:

- `--out` names a folder: not the empty string, not the file-system root; the current folder, one
  of its parents or the home folder only when empty or already a run folder (its manifest.json is
  a run's, or a run's journal is there).
- A file with one of the run's names is removed only when an earlier run wrote it: the folder's
  manifest.json lists it with the same sha256, or the journal `.hil-run.owned` (written before a
  run creates anything, removed once its manifest is written) says a run that never finished
  (SIGKILL, a full disk) was writing it. Any other such file stops the run before any work.
- `.hil-run.reserve` holds room for the manifest: written when the run claims the folder, removed
  just before the manifest is written, so a disk that fills during the run (the debugger's dump, a
  log) still takes the manifest saying so.
- `.hil-dump-*.partial` files are the debugger's half-written read-outs: no run holding the folder
  means none is being written, so any command that opens the run folder removes them.
"""

from __future__ import annotations

import fcntl
import json
import os
from collections.abc import Iterable
from pathlib import Path

from hil.base.no_follow import no_follow
from hil.base import atomic
from hil.base.errors import InputError
from hil.records.manifest import MANIFEST_NAME, sha256_file
from hil.run.folder import LOCK_NAME

JOURNAL_NAME = ".hil-run.owned"
JOURNAL_SCHEMA = "et-hil/run-owned/1"
PARTIAL_GLOB = ".hil-dump-*.partial"
RESERVE_NAME = ".hil-run.reserve"
# Room kept for the manifest (a failed run's is ~5 KB; error.txt beside it), in blocks of any file system.
RESERVE_BYTES = 64 * 1024


def named_folder(text: str | os.PathLike[str], what: str = "--out") -> Path:
    """`text` as the run folder's path; InputError when it names no folder a run may write into."""
    raw = os.fspath(text)
    if not raw.strip():
        raise InputError(f"{what} is empty: name the folder for the run's artifacts (an unset variable?)")
    path = Path(raw).expanduser()
    resolved = path.resolve()
    if resolved == Path(resolved.anchor):
        raise InputError(f"{what} {raw}: the file-system root is no run folder; name a folder for the artifacts")
    if resolved.is_dir() and _shared_place(resolved) and not is_run_folder(resolved) and any(resolved.iterdir()):
        raise InputError(
            f"{what} {raw} is {resolved}, the current folder, one of its parents or the home folder, and holds"
            " files of its own (it is no run folder); name a new or empty folder for the run's artifacts"
        )
    return path


def _shared_place(folder: Path) -> bool:
    """The current folder, its parents and the home folder: places a run folder is never meant to be."""
    cwd = Path.cwd().resolve()
    home = Path.home().resolve()
    return folder == home or folder == cwd or folder in cwd.parents


def is_run_folder(folder: Path) -> bool:
    """A folder a run wrote: its manifest is a run's, or a run that never finished journaled its files."""
    folder = Path(folder)
    return _manifest_files(folder)[0] or (folder / JOURNAL_NAME).is_file()


def _journal_names(folder: Path) -> set[str]:
    try:
        data = json.loads((folder / JOURNAL_NAME).read_text("utf-8"))
    except (OSError, ValueError):
        return set()
    if not isinstance(data, dict) or data.get("schema") != JOURNAL_SCHEMA or not isinstance(data.get("files"), list):
        return set()
    return {name for name in data["files"] if isinstance(name, str)}


def _manifest_files(folder: Path) -> tuple[bool, dict[str, str]]:
    """(whether manifest.json is a run's manifest, name -> sha256 of the files it lists)."""
    try:
        data = json.loads((folder / MANIFEST_NAME).read_bytes())
    except (OSError, ValueError, RecursionError):
        return False, {}
    if not isinstance(data, dict) or not str(data.get("schema", "")).startswith("et-hil/manifest/"):
        return False, {}
    files = data.get("files") if isinstance(data.get("files"), dict) else {}
    return True, {name: entry["sha256"] for name, entry in files.items()
                  if isinstance(entry, dict) and isinstance(entry.get("sha256"), str)}


def foreign_files(folder: Path, names: Iterable[str]) -> list[str]:
    """The files among `names` in `folder` that no run wrote (see the module docstring)."""
    journal = _journal_names(folder)
    is_manifest, listed = _manifest_files(folder)
    foreign = []
    for name in sorted(set(names)):
        path = folder / name
        if not (path.exists() or path.is_symlink()) or name in journal:
            continue
        if name == MANIFEST_NAME and is_manifest:
            continue
        if path.is_file() and not path.is_symlink() and listed.get(name) == _sha256(path):
            continue
        foreign.append(name)
    return foreign


def _sha256(path: Path) -> str | None:
    try:
        return sha256_file(path)
    except OSError:
        return None


def claim(folder: Path, names: Iterable[str]) -> None:
    """Before a run writes `folder` (its lock held): refuse files no run wrote, remove the earlier run's
    files among `names`, and journal `names` as this run's."""
    names = tuple(names)
    foreign = foreign_files(folder, names)
    if foreign:
        shown = ", ".join(foreign[:6]) + (", ..." if len(foreign) > 6 else "")
        raise InputError(
            f"--out {folder} holds {shown}, which no et-hil run wrote (or which changed since); a run would"
            " replace them: move them away or name another folder"
        )
    remove_partials(folder)
    atomic.write_json(folder / JOURNAL_NAME, {"schema": JOURNAL_SCHEMA, "files": sorted(names)})
    for name in names:
        (folder / name).unlink(missing_ok=True)
    try:
        atomic.write_bytes(folder / RESERVE_NAME, bytes(RESERVE_BYTES))
    except OSError:
        pass  # a disk this full fails the run's first write, which names the file


def release_reserve(folder: Path) -> None:
    """The room claim() kept: given back, for the manifest that follows."""
    (Path(folder) / RESERVE_NAME).unlink(missing_ok=True)


def settled(folder: Path) -> None:
    """The run's manifest is written: it now says which files are the run's; the journal goes."""
    (Path(folder) / JOURNAL_NAME).unlink(missing_ok=True)


def remove_partials(folder: Path) -> list[Path]:
    """Remove the debugger's half-written read-outs in `folder`; the caller holds its run lock."""
    removed = []
    for partial in Path(folder).glob(PARTIAL_GLOB):
        try:
            partial.unlink()
            removed.append(partial)
        except OSError:
            pass
    return removed


def clean_if_idle(folder: Path) -> list[Path]:
    """Any command opening a run folder: remove stale `.partial` read-outs when no run holds the folder.

    The lock is only tried (never waited for, never created): a live run keeps its dump in progress.
    """
    folder = Path(folder)
    if not any(folder.glob(PARTIAL_GLOB)):
        return []
    try:
        fd = no_follow(folder / LOCK_NAME, os.O_RDWR)
    except OSError:
        return []
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return []  # a run holds it
        try:
            return remove_partials(folder)
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def clean_named(values: Iterable[object]) -> None:
    """`clean_if_idle` for each folder a command's arguments name (a file's own folder too)."""
    for value in values:
        if not isinstance(value, (str, os.PathLike)) or not os.fspath(value):
            continue
        path = Path(value)
        for folder in (path, path.parent) if not path.is_dir() else (path,):
            if folder.is_dir():
                clean_if_idle(folder)
