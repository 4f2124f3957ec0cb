"""Loopback TCP ports for the processes the harness starts (QEMU's GDB stub and UART)."""

from __future__ import annotations

import socket
import time
from collections.abc import Callable

from hil.base.errors import TimeoutExpired

LOOPBACK = "127.0.0.1"


def free_tcp_port() -> int:
    """A port on 127.0.0.1 that was free a moment ago.

    The kernel picks it (bind to port 0), so parallel test workers do not collide the way a
    fixed port would; the tiny window before the real server binds is closed by the caller
    retrying its start when the port turns out taken.
    """
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((LOOPBACK, 0))
        return int(sock.getsockname()[1])


def port_listening(port: int) -> bool:
    """True when a socket listens on 127.0.0.1:port (or 0.0.0.0:port), read from /proc/net/tcp.

    Deliberately not a connect() probe: QEMU's UART chardev accepts the probe as its one client
    and, with the guest's receiver off, does not notice it left, so the console's first bytes
    would go to the dead probe connection instead of the real reader (seen with QEMU 7.2).
    """
    wanted = {f"0100007F:{port:04X}", f"00000000:{port:04X}"}
    try:
        with open("/proc/net/tcp", encoding="ascii") as table:
            next(table, None)
            for row in table:
                fields = row.split()
                if len(fields) > 3 and fields[1] in wanted and fields[3] == "0A":  # 0A = LISTEN
                    return True
    except OSError:
        return False
    return False


def wait_for_listen(port: int, deadline: float, *, what: str, alive: Callable[[], bool] = lambda: True) -> None:
    """Poll until 127.0.0.1:port listens, the owner dies, or `deadline` (time.monotonic) passes.

    `alive` lets the caller stop waiting at once when the process that should listen has exited.
    """
    while True:
        if port_listening(port):
            return
        if not alive():
            raise TimeoutExpired(f"{what}: the process exited before {LOOPBACK}:{port} was listening")
        if time.monotonic() >= deadline:
            raise TimeoutExpired(f"{what}: nothing listening on {LOOPBACK}:{port} in time")
        time.sleep(0.02)
