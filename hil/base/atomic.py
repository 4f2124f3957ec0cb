"""Write files whole or not at all, so a crash never leaves a half-written artifact that looks complete.

Temp files and folders (mkstemp, mkdtemp) are created private (0600, 0700) whatever the umask;
once renamed into place they would stay private, and a report could not be served nor a cache
shared. Everything published here gets the mode a plain `open()` / `mkdir()` would have given it
(0644 / 0755 under the usual umask 022).
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

from hil.base.errors import WriteError


def umask() -> int:
    """The process umask, read without changing it where Linux allows (/proc), else by a set-and-restore."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def file_mode() -> int:
    return 0o666 & ~umask()


def dir_mode() -> int:
    return 0o777 & ~umask()


def make_public_dir(path: Path) -> Path:
    """Give a folder made by mkdtemp the mode `mkdir` would have given it."""
    os.chmod(path, dir_mode())
    return Path(path)


def write_bytes(path: Path, data: bytes) -> Path:
    """Write `data` to a temp file beside `path`, then rename it into place with the umask's mode.

    A failed write (ENOSPC, EROFS, EDQUOT, EFBIG) leaves `path` as it was and raises WriteError
    naming `path` and the errno: an OSError from a file object's write() names no file.
    """
    return _publish(Path(path), lambda handle: handle.write(data))


def copy_file(source: Path, path: Path) -> Path:
    """Copy `source` to `path` whole or not at all (see write_bytes)."""
    with open(source, "rb") as src:
        return _publish(Path(path), lambda handle: shutil.copyfileobj(src, handle, 1 << 20))


def _publish(path: Path, fill: Callable[[IO[bytes]], object]) -> Path:
    tmp: str | None = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
        with os.fdopen(fd, "wb") as handle:
            fill(handle)
            os.fchmod(handle.fileno(), file_mode())
        os.replace(tmp, path)
    except OSError as exc:
        if tmp is not None:
            Path(tmp).unlink(missing_ok=True)
        raise WriteError.from_os(exc, path) from exc
    except BaseException:
        if tmp is not None:
            Path(tmp).unlink(missing_ok=True)
        raise
    return path


def write_text(path: Path, text: str) -> Path:
    return write_bytes(path, text.encode("utf-8"))


def write_json(path: Path, obj: Any) -> Path:
    return write_text(path, json.dumps(obj, indent=2, sort_keys=False) + "\n")
