"""What became of QEMU, asked before the debugger is blamed; and who holds QEMU's UART.

Why: when QEMU dies (killed, crashed, out of memory) gdb only sees its stub go away and says
"Remote communication error"; the run failed because of QEMU, and that is what the message must
lead with: its exit status or signal and the last lines of qemu.log. A QEMU that exited with a
status of its own is the image's semihosting exit, the board's usual end: that stays a note.

QEMU's UART socket serves one client. A stray client that connected first (a `nc` left running,
a second harness on a reused port) leaves the console reader queued, never served: the run would
fail later with "(no console output)". `uart_peer()` reads which client QEMU serves (`info
chardev`) so the board can name the one holding it.
"""

from __future__ import annotations

import os
import re
import signal
from pathlib import Path
from typing import TYPE_CHECKING

from hil.base.errors import TargetError

if TYPE_CHECKING:
    from hil.target.qemu import QemuProcess

# Lines of qemu.log quoted when QEMU died.
LOG_TAIL_LINES = 3
# `serial0: filename=tcp:127.0.0.1:PORT,server=on<->127.0.0.1:PEER`: the client QEMU serves.
CHARDEV_PEER = re.compile(r"^serial0:.*<->\s*([0-9.]+|\[[0-9a-fA-F:.]+\]):(\d+)", re.M)


def describe_status(status: int) -> str:
    if status < 0:
        try:
            return f"was killed by {signal.Signals(-status).name} (signal {-status})"
        except ValueError:
            return f"was killed by signal {-status}"
    return f"exited with status {status}"


def log_tail(log_path: Path, lines: int = LOG_TAIL_LINES) -> str:
    """The last lines QEMU itself wrote (not the harness's command line or end marker)."""
    try:
        text = Path(log_path).read_text("utf-8", errors="replace")
    except OSError:
        return "(qemu.log unreadable)"
    own = [line for line in text.splitlines() if line.strip() and not line.startswith(("$ ", "[qemu "))]
    return " | ".join(own[-lines:]) if own else "(nothing)"


def blame_qemu_first(exc: TargetError, qemu: "QemuProcess | None", board: str, reap_s: float) -> TargetError:
    """`exc` led by QEMU's death when QEMU was killed by a signal; with QEMU's exit status as a note
    when it exited on its own; unchanged while it runs. Waits up to `reap_s` s for a dying QEMU."""
    status = None if qemu is None else qemu.exit_status(reap_s)
    if status is None:
        return exc
    assert qemu is not None
    if status < 0:
        text = (f"board '{board}': QEMU {describe_status(status)}; last lines of {qemu.log_path}:"
                f" {log_tail(qemu.log_path)}; the debugger then said: {exc}")
    else:
        text = f"{exc}; QEMU exited with status {status} (log: {qemu.log_path})"
    widened = type(exc)(text)
    widened.__dict__.update(exc.__dict__)  # a fault's report travels on
    return widened


def uart_peer(chardev_info: str) -> int | None:
    """The port of the client QEMU's UART serves, from `info chardev`; None when none is connected."""
    match = CHARDEV_PEER.search(chardev_info)
    return int(match.group(2)) if match else None


def socket_owner(local_port: int) -> str:
    """`pid N (comm)` of the process holding a loopback TCP socket bound to `local_port`, from /proc."""
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            rows = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            fields = row.split()
            if len(fields) > 9 and int(fields[1].rsplit(":", 1)[1], 16) == local_port:
                inodes.add(fields[9])
    for entry in os.listdir("/proc") if inodes else ():
        if not entry.isdigit():
            continue
        try:
            links = {os.readlink(f"/proc/{entry}/fd/{fd}") for fd in os.listdir(f"/proc/{entry}/fd")}
            if any(f"socket:[{inode}]" in links for inode in inodes):
                comm = Path(f"/proc/{entry}/comm").read_text().strip()
                return f"pid {entry} ({comm})"
        except OSError:
            continue
    return "a process this user cannot see"


def uart_held_by_other(board: str, serial_port: int, peer: int, log_path: Path) -> TargetError:
    """The console reader is queued behind another client of QEMU's UART: name that client."""
    return TargetError(
        f"board '{board}': QEMU's UART (tcp port {serial_port}) is busy: another client holds it"
        f" (127.0.0.1:{peer}, {socket_owner(peer)}), so the console reader is never served; end that"
        f" client and run again (log: {log_path})"
    )
