"""What a cache reader does with an entry that fails its own check (hil.base.entry_check): remove it,
say so in one line naming it, and build it again; never serve it, never blame it on the user's input.

A cache that cannot be written (restored read-only) cannot drop the entry: that is a CacheFault
(exit status 3, the machine's fault) naming the entry, what is wrong with it and how to clear it
(`rm -rf` the entry's folder, or point HIL_CACHE_DIR at a writable copy): a command every user has,
checkout or wheel.

Entries written by an older et-hil hold no record. They are removed and rebuilt like a damaged one,
not recorded as they are: an older version is exactly what may have left a truncated file behind,
and a record made now would vouch for it forever. Every such entry is cheap to make again (an
export, a link, one gcc call); the runtime's libraries, which are not, have their own rule
(hil.firmware.runtime_libraries).
"""

from __future__ import annotations

import os
import secrets
import shutil
from collections.abc import Iterable
from pathlib import Path

from hil.base import log
from hil.base.entry_check import check
from hil.base.errors import EnvironmentFault

DISCARDED_PREFIX = ".discarded-"


class CacheFault(EnvironmentFault):
    """A cache entry fails its check and the cache cannot be written, so it can be neither served nor rebuilt."""


def served(folder: Path, what: str, names: Iterable[str] | None = None) -> bool:
    """True when `folder` is an entry whose files pass their check: serve it. False when there is none, or
    there was a bad one, now removed (one line said so): build it. `what` names the entry's kind in that line."""
    folder = Path(folder)
    if not folder.is_dir():
        return False
    verdict = check(folder, names)
    if verdict.sound:
        return True
    discard(folder, what, verdict.problem)
    return False


def discard(folder: Path, what: str, problem: str) -> None:
    """Remove the bad entry `folder`: renamed aside first (one atomic step, so a concurrent reader finds
    either the entry or nothing), then deleted. A CacheFault when the cache cannot be written."""
    folder = Path(folder)
    aside = folder.parent / f"{DISCARDED_PREFIX}{folder.name}-{secrets.token_hex(4)}"
    try:
        os.rename(folder, aside)
    except FileNotFoundError:
        return  # another reader removed it first
    except OSError as exc:
        raise CacheFault(f"cache entry {folder} ({what}) fails its check: {problem}; the cache cannot be written "
                         f"({exc.strerror}), so it is not rebuilt: clear it with `rm -rf {folder}`, or point "
                         "HIL_CACHE_DIR at a writable copy of the cache") from None
    shutil.rmtree(aside, ignore_errors=True)
    log.warning(f"cache entry {folder} ({what}) failed its check: {problem}; removed, building it again")
