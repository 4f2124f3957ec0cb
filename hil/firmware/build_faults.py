"""A failed build command told apart when the disk was full: read from the log the command left.

A compiler, assembler or linker that cannot write its output exits 1 like any failed compile; the
cause is only in what it printed (`No space left on device`, `ld: final link failed: No space left
on device`, `as: ... final close failed`). A build failed that way used to read "failed with exit status
1", blamed on the build, when the machine was at fault: the log is read back for those words, so the
one line says which step of which image, ENOSPC, and where the log is.
"""

from __future__ import annotations

import errno
import os
import re
from pathlib import Path

# What the GNU tools, CMake and Ninja print when a write fails for want of room or quota.
_DISK_FULL = re.compile(r"No space left on device|\bENOSPC\b|Disk quota exceeded|\bEDQUOT\b")
# The linker's own words, or Ninja's `FAILED: ` line naming an executable image (no suffix, or .elf).
_LINKING = re.compile(r"final link failed|\bld(?:\.bfd|\.gold)?: |collect2|cannot open map file|cannot open output file")
_NINJA_FAILED = re.compile(r"^FAILED: (?:\[code=\d+\] )?(?P<target>\S+)", re.MULTILINE)
_ARCHIVES = (".a",)
_LINKED = (".elf", "")


def disk_full(log: Path, step: str) -> str | None:
    """"the {step} failed: No space left on device (ENOSPC, errno 28)" when `log` says a write found the disk
    full, else None. `step` is what the command did ("configure", "build"); a build is named by what
    failed in it: "compile", "archive" or "link"."""
    try:
        text = Path(log).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    found = _DISK_FULL.search(text)
    if found is None:
        return None
    start, end = text.rfind("\n", 0, found.start()) + 1, text.find("\n", found.end())
    line = text[start:end if end >= 0 else len(text)]
    if step == "build":
        step = _what_failed(text[:found.end()], line)
    return _said(step, errno.EDQUOT if found.group(0) in ("Disk quota exceeded", "EDQUOT") else errno.ENOSPC)


def refused_write(exc: OSError, log: Path, step: str) -> str | None:
    """The same words for a build whose log could not take the harness's own line (the command's status, written
    at its end: an OSError naming no file), when the errno says the disk refused; else None. What the log
    holds names the step more closely (a build's compile or link)."""
    if exc.errno not in {errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EFBIG}:
        return None
    return disk_full(log, step) or _said(step, exc.errno)


def _said(step: str, code: int) -> str:
    return f"the {step} failed: {os.strerror(code)} ({errno.errorcode[code]}, errno {code})"


def _what_failed(before: str, line: str) -> str:
    """compile, archive or link: the linker's words on the line, else the suffix of Ninja's last FAILED target."""
    if _LINKING.search(line):
        return "link"
    targets = _NINJA_FAILED.findall(before)
    suffix = Path(targets[-1]).suffix if targets else ".o"
    return "archive" if suffix in _ARCHIVES else "link" if suffix in _LINKED else "compile"
