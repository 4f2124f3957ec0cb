"""Files the harness writes, opened without following a symbolic link it did not make.

Why: run folders, caches, artifacts folders and histories come from elsewhere (a colleague's CI, a shared
folder). A `.hil-run.lock -> FILE` planted in one made the lock's `O_CREAT` and `ftruncate` empty FILE, even on
a run refused for a bad option; a log opened for appending would have written into FILE. `O_NOFOLLOW` (open(2))
makes the open itself fail (ELOOP) when the last component is a link, with no window between a check and the
open; the refusal names the link and where it points. Whole-file writes (hil.base.atomic) need none of this:
they write a fresh temporary file (O_EXCL) and rename it over the name, which replaces a link, never its target.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Iterable
from pathlib import Path

from hil.base.errors import InputError


class LinkRefused(InputError):
    """A file the harness would write (or read from a run folder) is a symbolic link: exit 2, naming it."""


def refusal(path: Path | str, why: str = "the harness writes no file through a link it did not make") -> LinkRefused:
    """The one line for a link at `path`: where it points, and that it is refused."""
    try:
        target = os.readlink(path)
    except OSError:
        target = "?"
    return LinkRefused(f"{path} is a symbolic link (to {target}): {why}; remove it or choose another folder")


def no_follow(path: str | os.PathLike[str], flags: int, mode: int = 0o666) -> int:
    """`os.open` that refuses a link at the last component; also an `opener=` for the builtin `open()`."""
    try:
        return os.open(path, flags | os.O_NOFOLLOW | os.O_CLOEXEC, mode)
    except OSError as exc:
        if exc.errno == errno.ELOOP and os.path.islink(path):
            raise refusal(Path(path)) from None
        raise


def not_a_link(path: Path | str) -> Path:
    """`path`, refused when it is a link: for writers that open by name through another library (SQLite)."""
    if os.path.islink(path):
        raise refusal(path)
    return Path(path)


def stays_inside(folder: Path, names: Iterable[str]) -> None:
    """Refuse a file of `folder` among `names` that is a link leading out of it: a reader would hash, parse or show
    a file the run never wrote (`serial.log -> elsewhere` was hashed by `hil inspect`)."""
    root = Path(folder).resolve()
    for name in names:
        path = Path(folder) / name
        if path.is_symlink() and not path.resolve().is_relative_to(root):
            raise refusal(path, "a run folder's file that leads out of the folder is not the run's, and is not read")
