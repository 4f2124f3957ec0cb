"""Finding the processes a test's `hil` left behind: every child inherits the test's HIL_SESSION_TAG."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

# What a run starts: the simulator, the debugger, a bench's debug server.
TARGET_NAMES = ("qemu-system-arm", "gdb-multiarch", "pyocd")


@dataclass(frozen=True)
class Tagged:
    """A live process carrying a test's tag, as /proc shows it."""

    pid: int
    ppid: int
    comm: str
    cmdline: str


def tagged(tag: str) -> list[Tagged]:
    """Live processes whose environment carries `tag` (children inherit it)."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            environ = (proc / "environ").read_bytes()
            cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            stat = (proc / "stat").read_text()
            state, ppid = stat.rsplit(")", 1)[1].split()[:2]
        except (OSError, IndexError, ValueError):
            continue
        if f"HIL_SESSION_TAG={tag}".encode() in environ and state not in ("Z", "X"):
            found.append(Tagged(int(proc.name), int(ppid), stat[stat.index("(") + 1 : stat.rindex(")")], cmdline))
    return found


def processes_tagged(tag: str) -> list[str]:
    """Command lines of live processes whose environment carries `tag` (children inherit it)."""
    return [proc.cmdline for proc in tagged(tag)]


def targets_tagged(tag: str) -> list[str]:
    return [cmd for cmd in processes_tagged(tag) if any(name in cmd for name in TARGET_NAMES)]


def left_after(tag: str, seconds: float = 5.0) -> list[str]:
    """The tagged QEMU / gdb / pyocd processes still running `seconds` after asking (none, if all is well)."""
    deadline = time.monotonic() + seconds
    while (left := targets_tagged(tag)) and time.monotonic() < deadline:
        time.sleep(0.05)
    return left
