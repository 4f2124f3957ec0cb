"""Content-hash cache helpers: a stable key from files and values, and folders published whole.

Kept free of torch and executorch imports on purpose: a cache hit must be decided (and served) in a
fraction of a second, before any heavy framework is loaded. Any stage that caches build products
(models, firmware images) can use these.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from hil.base.atomic import make_public_dir
from hil.records.manifest import package_version


class ContentKey:
    """A sha256 over named parts, each framed by its name and length.

    The framing matters: without it, ("ab", "c") and ("a", "bc") would hash alike, and two files
    swapping content would give the same key.
    """

    def __init__(self, kind: str) -> None:
        self._hash = hashlib.sha256()
        self.add_text("kind", kind)

    def add_bytes(self, name: str, data: bytes) -> "ContentKey":
        for chunk in (name.encode("utf-8"), data):
            self._hash.update(len(chunk).to_bytes(8, "little"))
            self._hash.update(chunk)
        return self

    def add_text(self, name: str, text: str) -> "ContentKey":
        return self.add_bytes(name, text.encode("utf-8"))

    def add_json(self, name: str, value: Any) -> "ContentKey":
        """Hash a JSON-able value in a canonical form (sorted keys), so dict order never matters."""
        return self.add_text(name, json.dumps(value, sort_keys=True, separators=(",", ":"), default=str))

    def add_file(self, path: Path, *, name: str | None = None) -> "ContentKey":
        """Hash a file's bytes under `name` (default: its file name, not its folder, so a moved
        checkout keeps its cache)."""
        path = Path(path)
        return self.add_bytes(f"file:{name or path.name}", path.read_bytes())

    def add_files(self, paths: Iterable[Path]) -> "ContentKey":
        for path in paths:
            self.add_file(path)
        return self

    def hexdigest(self) -> str:
        return self._hash.hexdigest()


def package_versions(*names: str) -> dict[str, str]:
    """Installed versions by distribution name ("missing" when absent), read from metadata only,
    which costs milliseconds where importing the package would cost seconds."""
    return {name: package_version(name) or "missing" for name in names}


@contextlib.contextmanager
def staged_dir(final: Path) -> Iterator[Path]:
    """Yield a private temp folder beside `final`; on success rename it to `final`.

    The rename is atomic, so readers see either no entry or a complete one. When another process
    published `final` first, its copy wins and ours is dropped: both were built from the same key,
    so they are interchangeable. On an exception the temp folder is removed and nothing appears.
    """
    final = Path(final)
    with staging_dir(final.parent, f".{final.name}.") as staging:
        yield staging
        publish_dir(staging, final)


@contextlib.contextmanager
def staging_dir(parent: Path, prefix: str) -> Iterator[Path]:
    """A private temp folder in `parent`, removed at the end unless renamed away first (publish_dir):
    for builders that learn their entry's final name only once it is built."""
    parent = Path(parent)
    parent.mkdir(parents=True, exist_ok=True)
    # mkdtemp makes it 0700; the published entry must be readable by whoever shares the cache.
    staging = make_public_dir(Path(tempfile.mkdtemp(prefix=prefix, dir=parent)))
    try:
        yield staging
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def publish_dir(staging: Path, final: Path) -> bool:
    """Rename `staging` to `final`; False (and `staging` left for the caller) when `final` exists."""
    try:
        os.rename(staging, final)
    except OSError:
        if final.is_dir():
            return False
        raise
    return True
