"""Loopback TCP ports for the processes the harness starts (QEMU's GDB stub and UART)."""

from __future__ import annotations

import socket
import time

from hil.errors import TimeoutExpired

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


def port_accepts(port: int, host: str = LOOPBACK, timeout: float = 0.2) -> bool:
    """True when something listens on host:port (a connect succeeds)."""
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def wait_for_port(port: int, deadline: float, *, what: str, host: str = LOOPBACK, alive=lambda: True) -> None:
    """Poll until host:port accepts a connection, the owner dies, or `deadline` (time.monotonic) passes.

    `alive` lets the caller stop waiting at once when the process that should listen has exited.
    """
    while True:
        if port_accepts(port, host):
            return
        if not alive():
            raise TimeoutExpired(f"{what}: the process exited before {host}:{port} accepted connections")
        if time.monotonic() >= deadline:
            raise TimeoutExpired(f"{what}: {host}:{port} did not accept connections in time")
        time.sleep(0.02)
