"""QEMU as a halted Cortex-M target: a GDB stub and a UART socket on loopback, nothing loaded yet.

QEMU starts with `-S` and no `-kernel`: the ELF is put in by GDB's `-target-download` (the
"flash" step, as on the real board), and the serial socket is opened before the CPU runs, so
not one byte of the console is lost.

With `serial_pty=True` UART0 is a pseudo-terminal instead (`-serial pty`): a lab's ser2net serves it
like a board's USB serial port, so the QEMU board can stand in for a board behind a labgrid place.
"""

from __future__ import annotations

import time
import os
import re
from pathlib import Path

from hil.base.errors import TargetError, TimeoutExpired
from hil.target.ports import LOOPBACK, free_tcp_port, wait_for_listen
from hil.target.process import ManagedProcess

# Seconds QEMU gets to open its sockets.
START_TIMEOUT_S = 10.0
# A port picked by free_tcp_port can be taken by someone else before QEMU binds it: try again.
START_ATTEMPTS = 3
# seccomp: no fork/exec (spawn), no set*uid (elevateprivileges), no obsolete or scheduling system calls.
SANDBOX = "on,obsolete=deny,elevateprivileges=deny,spawn=deny,resourcecontrol=deny"
# What a QEMU built without libseccomp says to `-sandbox on`.
NO_SECCOMP = "seccomp support is disabled"
PTY_LINE = re.compile(r"char device redirected to (/dev/pts/\d+) \(label serial0\)")


class QemuProcess:
    """One QEMU system emulator, halted, with its GDB stub on `gdb_port` and UART0 on `serial_port`."""

    def __init__(self, executable: str, machine: str, cpu: str | None, log_path: Path,
                 *, serial_pty: bool = False, icount_shift: int | None = None) -> None:
        self.executable = executable
        self.serial_pty = serial_pty
        self.icount_shift = icount_shift
        self.machine = machine
        self.cpu = cpu
        self.log_path = Path(log_path)
        self.gdb_port = 0
        self.serial_port = 0
        self.process: ManagedProcess | None = None

    def argv(self) -> list[str]:
        """The command line for the current ports (shown in qemu.log)."""
        argv = [
            self.executable, "-machine", self.machine,
            "-display", "none", "-monitor", "none", "-parallel", "none",
            "-serial", "pty" if self.serial_pty else f"tcp:{LOOPBACK}:{self.serial_port},server=on,wait=off",
            "-gdb", f"tcp:{LOOPBACK}:{self.gdb_port}",
            # The guest cannot reach the host (hil.target.guest_exit): no semihosting call is served, and
            # QEMU's seccomp filter (`qemu-system-arm -help`, -sandbox) stops it from starting any process.
            "-semihosting-config", "enable=off",
            "-sandbox", SANDBOX,
            "-S",
        ]
        if self.cpu:
            argv[3:3] = ["-cpu", self.cpu]
        if self.icount_shift is not None:
            # Virtual time from the instruction count alone: every instruction is 2^shift ns, the
            # host's speed and load never reach the guest's timers (sleep=off: no idle jumps), so
            # two runs of one program read the same timer values.
            argv[-1:-1] = ["-icount", f"shift={self.icount_shift},sleep=off"]
        return argv

    def start(self, timeout: float = START_TIMEOUT_S) -> "QemuProcess":
        """Start QEMU and wait until both its sockets listen (retrying when a port was taken)."""
        last_error: TimeoutExpired | None = None
        for _attempt in range(START_ATTEMPTS):
            self.launch()
            try:
                return self.wait_ready(timeout)
            except TimeoutExpired as exc:
                last_error = exc
                if not _port_clash(self.log_path):
                    break
        assert last_error is not None
        raise last_error

    def launch(self) -> "QemuProcess":
        """Start the QEMU process on fresh ports without waiting; pair with `wait_ready()`.

        Split from `start()` so a caller can do other slow work (starting gdb) while QEMU boots.
        """
        if self.process is not None:
            self.process.close()
        self.gdb_port, self.serial_port = free_tcp_port(), free_tcp_port()
        while self.serial_port == self.gdb_port:
            self.serial_port = free_tcp_port()
        self.process = ManagedProcess(self.argv(), "qemu", self.log_path).start()
        return self

    def wait_ready(self, timeout: float = START_TIMEOUT_S) -> "QemuProcess":
        """Wait until the GDB stub and the UART socket listen; on failure QEMU is stopped and its log named."""
        process = self.process
        if process is None:
            raise TargetError("QEMU: wait_ready() before launch()")
        deadline = time.monotonic() + timeout
        try:
            waits = [(self.gdb_port, "GDB stub")] + ([] if self.serial_pty else [(self.serial_port, "UART socket")])
            for port, what in waits:
                wait_for_listen(port, deadline, what=f"QEMU {what}", alive=lambda: process.alive)
            while self.serial_pty and self.pty_path is None:  # QEMU names its pty before it listens
                if time.monotonic() >= deadline:
                    raise TimeoutExpired(f"QEMU did not name its serial pty in {self.log_path}")
                time.sleep(0.02)
        except TimeoutExpired as exc:
            status = process.close()
            if _log_says(self.log_path, NO_SECCOMP):
                raise TargetError(f"QEMU {self.executable} has no seccomp sandbox ({NO_SECCOMP}), which the harness"
                                  f" runs every guest in: use a QEMU built with libseccomp (log: {self.log_path})"
                                  ) from exc
            raise TimeoutExpired(f"{exc} (exit status {status}; log: {self.log_path})") from exc
        return self

    def ensure_ready(self, timeout: float = START_TIMEOUT_S) -> "QemuProcess":
        """`wait_ready()` after `launch()`, falling back to a full `start()` when a port was taken meanwhile."""
        try:
            return self.wait_ready(timeout)
        except TimeoutExpired:
            if not _port_clash(self.log_path):
                raise
        return self.start(timeout)

    @property
    def pty_path(self) -> str | None:
        """The pseudo-terminal QEMU made for UART0 (`-serial pty`), as its log names it."""
        try:
            match = PTY_LINE.search(self.log_path.read_text(encoding="utf-8", errors="replace"))
        except OSError:
            return None
        return match.group(1) if match else None

    @property
    def alive(self) -> bool:
        return self.process is not None and self.process.alive

    def exit_status(self, timeout: float = 5.0) -> int | None:
        """QEMU's exit status (a QEMU that died: the image's exit is taken by the debugger), waiting up to `timeout` s for it."""
        if self.process is None:
            return None
        try:
            return self.process.wait(timeout)
        except TimeoutExpired:
            return None

    def close(self) -> int | None:
        """Stop QEMU (if it has not exited) and return its exit status."""
        return self.process.close() if self.process is not None else None


def _port_clash(log_path: Path) -> bool:
    """True when QEMU's log says a socket could not be bound (another process took the port)."""
    return _log_says(log_path, "Address already in use") or _log_says(log_path, "Failed to bind")


def _log_says(log_path: Path, text: str) -> bool:
    try:
        return text in log_path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False


def pty_opened_by_other(pty: str, exclude_pid: int | None) -> bool:
    """True when a process other than `exclude_pid` (QEMU) has `pty` open: the console's reader is attached.

    QEMU holds only the pty's master side; whoever serves the console (ser2net) opens the slave path.
    """
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == exclude_pid:
            continue
        try:
            fds = os.listdir(f"/proc/{entry}/fd")
        except OSError:
            continue
        for fd in fds:
            try:
                if os.readlink(f"/proc/{entry}/fd/{fd}") == pty:
                    return True
            except OSError:
                continue
    return False
