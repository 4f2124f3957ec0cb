"""What a model's own code read while it was exported, kept beside the cached `.pte` and checked again
before the entry is served.

Why: the static key (hil.aot.deps: the model file, its local imports, its declared data files) cannot
see what a factory reads at run time. A width from an environment variable, weights from `torch.load`
of a checkpoint, a JSON config: after a change the static key is the same, and the old `.pte` was
served. So the export records every such read (hil.aot.follow) and a lookup answers "hit" only when
every one still gives what it gave then:

* files opened for reading, by Python or by native code (hil.aot.native_trace), by their sha256 (or "absent"
  when the open failed);
* folders listed, by the sorted names in them;
* paths whose existence or kind was asked (`os.path.exists`, `Path.is_file`), by that kind;
* environment variables, by the sha256 of their value (never the value: it may be a token), or
  unset; and when the model walked the whole environment, the set of names in it;
* the working folder, when the model opened a relative path.

A read that cannot be checked again later (a socket, a download, a subprocess, a random device), and reads
by native code where strace cannot follow them, are named in `unfollowed`; such an export is used once and never served from the cache.

Paths below the model file's folder are kept relative to it, so a moved checkout still hits. This
module needs no torch: a lookup re-hashes files and re-reads variables in milliseconds.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hil.base.errors import ModelError

READS_NAME = "reads.json"
READS_SCHEMA = "et-hil/model-reads/1"
ABSENT, FOLDER, SPECIAL, UNREADABLE = "absent", "dir", "special", "unreadable"
# Names listed in a manifest per kind of read; the count says how many there were in all.
MANIFEST_LIST_LIMIT = 20


def _empty() -> Mapping[str, Any]:
    return {}


@dataclass(frozen=True)
class Reads:
    """One export's reads from outside the Python installation (see the module docstring).

    Keys of `files`, `folders` and `probes` are paths: relative ones are below the model's folder.
    """

    files: Mapping[str, str] = field(default_factory=_empty)
    folders: Mapping[str, str] = field(default_factory=_empty)
    probes: Mapping[str, str] = field(default_factory=_empty)
    env: Mapping[str, str | None] = field(default_factory=_empty)
    env_names: str | None = None  # sha256 of the sorted variable names, when the model iterated them
    cwd: str | None = None
    unfollowed: tuple[str, ...] = ()

    @property
    def cacheable(self) -> bool:
        return not self.unfollowed

    def to_json(self) -> dict[str, Any]:
        return {"schema": READS_SCHEMA, "files": dict(sorted(self.files.items())),
                "folders": dict(sorted(self.folders.items())), "probes": dict(sorted(self.probes.items())),
                "env": dict(sorted(self.env.items())), "env_names": self.env_names, "cwd": self.cwd,
                "unfollowed": list(self.unfollowed)}

    @classmethod
    def from_json(cls, data: Any) -> "Reads":
        if not isinstance(data, dict) or data.get("schema") != READS_SCHEMA:
            raise ValueError(f"not a {READS_SCHEMA} record")
        return cls(dict(data["files"]), dict(data["folders"]), dict(data["probes"]), dict(data["env"]),
                   data["env_names"], data["cwd"], tuple(data["unfollowed"]))

    def digest(self) -> str:
        """sha256 of the record: equal reads give the same cache variant, whichever session made it."""
        text = json.dumps(self.to_json(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode("utf-8")).hexdigest()

    def not_cached_reason(self) -> str | None:
        if not self.unfollowed:
            return None
        more = f" (and {len(self.unfollowed) - 1} more)" if len(self.unfollowed) > 1 else ""
        return f"{self.unfollowed[0]}{more}: not cached"

    def summary(self) -> dict[str, Any]:
        """For the run's manifest: what the cache key followed, and why not cached when it was not."""
        out: dict[str, Any] = {"cacheable": self.cacheable}
        for label, names in (("files", self.files), ("folders", self.folders), ("paths_checked", self.probes),
                             ("environment", self.env)):
            listed = sorted(names)
            out[label] = listed[:MANIFEST_LIST_LIMIT] + ([f"... {len(listed) - MANIFEST_LIST_LIMIT} more"]
                                                         if len(listed) > MANIFEST_LIST_LIMIT else [])
        if self.env_names is not None:
            out["environment_listed"] = True
        if self.cwd is not None:
            out["working_folder"] = self.cwd
        if self.unfollowed:
            out["not_cached"] = self.not_cached_reason()
            out["unfollowed"] = list(self.unfollowed[:MANIFEST_LIST_LIMIT])
        return out


def write_reads(folder: Path, reads: Reads) -> None:
    from hil.base.atomic import write_json

    write_json(folder / READS_NAME, reads.to_json())


def read_reads(folder: Path) -> Reads | None:
    """The record in a cache entry, None when missing or unreadable (then the entry is not served)."""
    try:
        return Reads.from_json(json.loads((folder / READS_NAME).read_text("utf-8")))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()


def file_state(path: str) -> str:
    """"sha256:<hex>" of a regular file's bytes; else absent, dir, special (a device, a pipe) or unreadable."""
    try:
        info = os.stat(path)
        if stat.S_ISDIR(info.st_mode):
            return FOLDER
        if not stat.S_ISREG(info.st_mode):
            return SPECIAL
        digest = hashlib.sha256()
        with open(path, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
        return f"sha256:{digest.hexdigest()}"
    except FileNotFoundError:
        return ABSENT
    except OSError:
        return UNREADABLE


def folder_state(path: str) -> str:
    """"names:<sha256>" of the sorted names in a folder; absent or unreadable when it cannot be listed."""
    try:
        names = sorted(os.listdir(path))
    except FileNotFoundError:
        return ABSENT
    except OSError:
        return UNREADABLE
    return f"names:{sha256_text(chr(0).join(names))}"


def path_kind(path: str) -> str:
    """What `os.stat` says a path is: file, dir, special, absent (or unreadable)."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return ABSENT
    except OSError:
        return UNREADABLE
    return "file" if stat.S_ISREG(mode) else FOLDER if stat.S_ISDIR(mode) else SPECIAL


def env_state(name: str) -> str | None:
    value = os.environ.get(name)
    return None if value is None else sha256_text(value)


def env_names_state() -> str:
    return sha256_text(chr(0).join(sorted(os.environ)))


def first_change(reads: Reads, model_dir: Path | None) -> str | None:
    """What no longer reads as it did when the entry was made ("file X changed"), or None: still valid."""
    if not reads.cacheable:
        return reads.not_cached_reason()
    if reads.cwd is not None and os.getcwd() != reads.cwd:
        return f"the working folder is {os.getcwd()}, not {reads.cwd} (the model opened a relative path)"
    for name, value in sorted(reads.env.items()):
        if env_state(name) != value:
            return f"environment variable {name} changed"
    if reads.env_names is not None and env_names_state() != reads.env_names:
        return "the set of environment variables changed (the model read them all)"
    for table, state, what in ((reads.files, file_state, "file"), (reads.folders, folder_state, "folder"),
                               (reads.probes, path_kind, "path")):
        for key, value in sorted(table.items()):
            path = where(key, model_dir)
            if state(path) != value:
                return f"{what} {path} changed"
    return None


def where(key: str, model_dir: Path | None) -> str:
    """The path a recorded key names now: relative keys lie below the model's folder."""
    if os.path.isabs(key):
        return key
    if model_dir is None:
        raise ModelError(f"a model-relative read {key!r} recorded for a model without a folder")
    return os.path.join(model_dir, key)
