"""Write files whole or not at all, so a crash never leaves a half-written artifact that looks complete.

Temp files and folders (mkstemp, mkdtemp) are created private (0600, 0700) whatever the umask;
once renamed into place they would stay private, and a report could not be served nor a cache
shared. Everything published here gets the mode a plain `open()` / `mkdir()` would have given it
(0644 / 0755 under the usual umask 022).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

from hil.base.errors import WriteError

# The errno inside an error's text (a shutil.Error row holds only str(OSError)).
_ERRNO = re.compile(r"\[Errno (\d+)\]")


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


def room_error(path: Path, size: int) -> WriteError | None:
    """Why `size` bytes could not go to `path`, when another program wrote it short and said nothing:
    gdb's `dump` fills a file through stdio, so a full disk leaves it short (often empty) with no error.
    The same number of bytes is written beside it and removed: the WriteError naming `path` and the
    errno (ENOSPC, EDQUOT, ...) that write met, or None when the disk takes them (the cause lies elsewhere)."""
    path = Path(path)
    tmp: str | None = None
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.room.", dir=path.parent)
        with os.fdopen(fd, "wb") as handle:
            handle.write(bytes(size))
            handle.flush()
            os.fsync(handle.fileno())  # a file system that reserves room only at write-back says so here
    except OSError as exc:
        return WriteError.if_write_error(OSError(exc.errno, exc.strerror), path)
    finally:
        if tmp is not None:
            Path(tmp).unlink(missing_ok=True)
    return None


def copy_error(exc: OSError, dest: Path) -> WriteError | None:
    """A failed copy into `dest` (shutil.copytree, copyfile) as a WriteError naming `dest` and the errno, when a
    write failed for want of room or permission (ENOSPC, EDQUOT, EROFS, EFBIG); None for any other cause.

    copytree goes on past each file it cannot copy and raises one shutil.Error listing them all, each as
    (source, destination, text), the errno only inside the text: a full disk made it a 2 MB traceback.
    """
    if isinstance(exc, shutil.Error):
        rows = exc.args[0] if exc.args and isinstance(exc.args[0], list) else []
        codes = [int(found.group(1)) for row in rows if (found := _ERRNO.search(str(row[-1] if row else "")))]
    else:
        codes = [exc.errno] if exc.errno is not None else []
    for code in codes:
        error = WriteError.if_write_error(OSError(code, os.strerror(code)), dest)
        if error is not None:
            return error
    return None


def write_text(path: Path, text: str) -> Path:
    return write_bytes(path, text.encode("utf-8"))


def write_json(path: Path, obj: Any) -> Path:
    return write_text(path, json.dumps(obj, indent=2, sort_keys=False) + "\n")
