"""A cache entry's own check: the size and sha256 of each of its files, recorded when it is written and
checked every time it is read.

Why: a cache entry is found by its name, a content key of what it was made from, and nothing made
sure its files still held what was written. A model.pte or an ELF truncated afterwards (a full disk
under an older version, a killed copy, a hand edit) kept its name, so every later run was served
the damaged file and failed, blaming the copy in the run folder, and no run ever rebuilt it.

The record (RECORD_NAME, in the entry's folder) is written after the files and atomically (temp file
and rename), so an entry holding a record is one whose files were all complete when it was made.
Reading an entry hashes each file once; a file whose size differs is refused before it is hashed.
What a reader does with a bad entry (remove it and rebuild, or refuse a read-only one) is
hil.base.cache_entry's.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType

from hil.base.atomic import write_json

RECORD_NAME = "sha256.json"
SCHEMA = "et-hil/cache-entry/1"
_BLOCK = 1 << 20


@dataclass(frozen=True)
class FileSum:
    """What one file held when the entry was written."""

    size: int
    sha256: str


@dataclass(frozen=True)
class EntryRecord:
    """The files of an entry (paths relative to its folder, with `/`) and what each held."""

    files: Mapping[str, FileSum]

    def to_json(self) -> dict[str, object]:
        return {"schema": SCHEMA,
                "files": {name: {"size": s.size, "sha256": s.sha256} for name, s in sorted(self.files.items())}}

    @classmethod
    def from_json(cls, data: object) -> "EntryRecord":
        """The record `data` holds; ValueError for anything else (another schema, a field of the wrong type)."""
        if not isinstance(data, dict) or data.get("schema") != SCHEMA or not isinstance(data.get("files"), dict):
            raise ValueError(f"not a {SCHEMA} record")
        files: dict[str, FileSum] = {}
        for name, entry in data["files"].items():
            size, digest = (entry.get("size"), entry.get("sha256")) if isinstance(entry, dict) else (None, None)
            if (not isinstance(size, int) or isinstance(size, bool) or size < 0 or not isinstance(digest, str)
                    or len(digest) != 64):
                raise ValueError(f"its line for {name!r} holds no size and sha256")
            files[name] = FileSum(size, digest)
        return cls(MappingProxyType(files))


@dataclass(frozen=True)
class Verdict:
    """How an entry fared: `sound`, or the `problem` in words; `recorded` is False for an entry with no
    record at all (written by an older et-hil, or not finished)."""

    sound: bool
    recorded: bool
    problem: str = ""


def file_sum(path: Path) -> FileSum:
    """Size and sha256 of `path`, read once in 1 MiB blocks."""
    digest, size = hashlib.sha256(), 0
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(_BLOCK), b""):
            digest.update(block)
            size += len(block)
    return FileSum(size, digest.hexdigest())


def entry_files(folder: Path) -> list[str]:
    """The files of a flat entry: every regular file in `folder` but the record itself."""
    return sorted(p.name for p in Path(folder).iterdir() if p.is_file() and p.name != RECORD_NAME)


def seal(folder: Path, names: Iterable[str] | None = None) -> EntryRecord:
    """Record the files `names` (default: every file of the flat entry) of `folder`; call it once they are all
    written: the record is the last thing written, and atomically."""
    folder = Path(folder)
    record = EntryRecord(MappingProxyType({name: file_sum(folder / name)
                                           for name in (entry_files(folder) if names is None else names)}))
    write_json(folder / RECORD_NAME, record.to_json())
    return record


def read_record(folder: Path) -> EntryRecord | None:
    """The record in `folder`; None when there is none; ValueError (with the words why) when it is unreadable."""
    try:
        text = (Path(folder) / RECORD_NAME).read_text("utf-8")
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise ValueError(f"its {RECORD_NAME} cannot be read ({exc.strerror})") from None
    try:
        return EntryRecord.from_json(json.loads(text))
    except ValueError as exc:
        raise ValueError(f"its {RECORD_NAME} is damaged ({exc})") from None


def check(folder: Path, names: Iterable[str] | None = None) -> Verdict:
    """Whether `folder`'s files still hold what its record says. The files checked are `names` (default:
    every file of the flat entry): one the record does not list is a problem, as is a listed one missing."""
    folder = Path(folder)
    try:
        record = read_record(folder)
    except ValueError as exc:
        return Verdict(False, True, str(exc))
    if record is None:
        return Verdict(False, False, f"no {RECORD_NAME} record of its files (written by an older et-hil?)")
    present = set(entry_files(folder) if names is None else names)
    unlisted = sorted(present - set(record.files))
    if unlisted:
        return Verdict(False, True, f"{unlisted[0]} is not in its {RECORD_NAME}")
    for name, want in sorted(record.files.items()):
        problem = file_problem(folder / name, name, want)
        if problem:
            return Verdict(False, True, problem)
    return Verdict(True, True)


def file_problem(path: Path, name: str, want: FileSum) -> str:
    """What is wrong with `path` (called `name`) against what it held when written; "" when nothing."""
    try:
        size = path.stat().st_size
        if size != want.size:  # a truncated or grown file: no need to read it
            return f"{name} is {size} bytes, {want.size} when written"
        have = file_sum(path)
    except FileNotFoundError:
        return f"{name} is missing"
    except OSError as exc:
        return f"{name} cannot be read ({exc.strerror})"
    if have.sha256 != want.sha256:
        return f"{name} has sha256 {have.sha256[:16]}..., {want.sha256[:16]}... when written"
    return ""
