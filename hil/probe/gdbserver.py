"""`pyocd gdbserver` as a managed child: on a free port, known to be listening before GDB connects.

Readiness is checked WITHOUT connecting to the port: pyOCD's GDB server treats every TCP
connection as a GDB client, halts the target on connect and *resumes* it on disconnect, so a
connect-probe (as used for QEMU's stub) would start the firmware before the breakpoint is set.
Instead the kernel's socket table (/proc/net/tcp*) is read for a LISTEN socket on the port, and,
where there is no /proc, pyOCD's OpenOCD-style `echo` command prints a token once it listens.
Without `--no-wait` pyOCD waits forever for a probe; with it, a missing probe ends the process
at once and the error names the log.

A gdbserver left over by an earlier job (one that outlived its harness, say one started before
servers died with their parent) holds the probe's USB interface, and the next job's server cannot
open it. `end_stale_gdbservers()` ends those for one probe; the board calls it once it holds the
probe lock, when no other live job may run a server for that probe.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path

from hil.base.errors import TargetError, TimeoutExpired
from hil.target.ports import free_tcp_port
from hil.target.process import ManagedProcess, live_children

READY_TOKEN = "hil-gdbserver-listening"


def gdbserver_argv(
    *,
    port: int,
    probe_id: str,
    target: str,
    pack: str | None = None,
    frequency_hz: int | None = None,
    core: int = 0,
) -> list[str]:
    """The command line; flags checked against pyocd/subcommands/gdbserver_cmd.py (0.46.0)."""
    argv = [
        sys.executable, "-m", "pyocd", "gdbserver",
        "--port", str(port),
        "--uid", probe_id,  # always given: without it pyOCD prompts on stdin when 2 probes are attached
        "--target", target,
        "--no-wait",  # no probe -> exit at once instead of waiting forever
        "--persist",  # survive GDB reconnects; the harness ends the process itself
        "--core", str(core),  # the RT700's core 0 (Cortex-M33) only: one port, no extra servers
        "-O", "semihost_console_type=console",  # no telnet server on the fixed port 4444
        # gdb's `break` (Z0) as an FPB comparator: the image runs from XSPI flash, where a BKPT cannot be written
        # (pyOCD reverts to hardware only where its target's memory map says flash; this does not rely on the map).
        "-O", "soft_bkpt_as_hard=true",
        "-c", f"echo {READY_TOKEN}",  # printed to stderr (our log) once the server listens
    ]
    if pack:
        argv += ["--pack", pack]
    if frequency_hz:
        argv += ["--frequency", str(frequency_hz)]
    return argv


def _listening_ports() -> set[int] | None:
    """Local TCP ports in LISTEN state, from /proc; None where there is no /proc (not Linux)."""
    ports: set[int] = set()
    seen_table = False
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        seen_table = True
        for line in lines:
            fields = line.split()
            if len(fields) > 3 and fields[3] == "0A":  # TCP_LISTEN
                ports.add(int(fields[1].rsplit(":", 1)[1], 16))
    return ports if seen_table else None


def _log_tail(path: Path, lines: int = 15) -> str:
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return "(no log)"
    return "\n".join(text.splitlines()[-lines:])


def stale_gdbservers(probe_id: str) -> list[tuple[int, str]]:
    """(pid, command line) of `pyocd gdbserver` processes et-hil started for `probe_id` that this
    process does not own: their argv holds our READY_TOKEN and `--uid <probe_id>` (case-insensitive)."""
    ours = {child.pid for child in live_children()} | {os.getpid()}
    found = []
    for entry in Path("/proc").iterdir() if Path("/proc").is_dir() else ():
        if not entry.name.isdigit() or int(entry.name) in ours:
            continue
        try:
            argv = (entry / "cmdline").read_bytes().decode(errors="replace").split("\0")
        except OSError:
            continue  # gone meanwhile, or not ours to read
        uids = [argv[i + 1].lower() for i, arg in enumerate(argv[:-1]) if arg == "--uid"]
        if "gdbserver" in argv and f"echo {READY_TOKEN}" in argv and probe_id.lower() in uids:
            found.append((int(entry.name), " ".join(arg for arg in argv if arg)))
    return found


def _gone(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return True
    return state in ("Z", "X")  # a zombie holds no probe


def end_stale_gdbservers(probe_id: str, grace: float = 2.0) -> list[str]:
    """End every stale gdbserver of `probe_id` (SIGTERM, then SIGKILL after `grace` s); one note each.

    Call only while holding the probe's lock: then a server for this probe belongs to no live job.
    """
    notes = []
    for pid, command in stale_gdbservers(probe_id):
        try:
            os.kill(pid, signal.SIGTERM)
            deadline = time.monotonic() + grace
            while not _gone(pid) and time.monotonic() < deadline:
                time.sleep(0.05)
            if not _gone(pid):
                os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        except PermissionError:
            notes.append(f"a stale pyocd gdbserver for probe {probe_id} (pid {pid}) belongs to another user and "
                         f"still holds the probe: end it ({command})")
            continue
        notes.append(f"ended a stale pyocd gdbserver for probe {probe_id} left by an earlier job (pid {pid})")
    return notes


class PyocdGdbServer:
    """A running `pyocd gdbserver` for one probe; `close()` always ends it (also on start failure)."""

    def __init__(
        self,
        *,
        probe_id: str,
        target: str,
        log_path: Path,
        pack: str | None = None,
        frequency_hz: int | None = None,
        port: int | None = None,
    ) -> None:
        self.port = port or free_tcp_port()
        self.log_path = Path(log_path)
        self.argv = gdbserver_argv(
            port=self.port, probe_id=probe_id, target=target, pack=pack, frequency_hz=frequency_hz
        )
        self.process = ManagedProcess(self.argv, name=f"pyocd gdbserver ({probe_id})", log_path=self.log_path)
        self.startup_s: float | None = None

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def _ready(self) -> bool:
        ports = _listening_ports()
        if ports is not None:
            return self.port in ports
        try:
            return READY_TOKEN in self.log_path.read_text(errors="replace")
        except OSError:
            return False

    def start(self, timeout: float = 30.0) -> "PyocdGdbServer":
        """Start and wait until the port listens; on any failure the process is ended first."""
        begin = time.monotonic()
        self.process.start()
        try:
            while not self._ready():
                if not self.process.alive:
                    raise TargetError(
                        f"pyocd gdbserver exited with status {self.process.returncode} before listening on "
                        f"{self.address} (log: {self.log_path}):\n{_log_tail(self.log_path)}"
                    )
                if time.monotonic() - begin > timeout:
                    raise TimeoutExpired(
                        f"pyocd gdbserver did not listen on {self.address} within {timeout:g} s "
                        f"(log: {self.log_path}):\n{_log_tail(self.log_path)}"
                    )
                time.sleep(0.05)
        except BaseException:
            self.close()
            raise
        self.startup_s = time.monotonic() - begin
        return self

    def close(self) -> None:
        self.process.close()

    def __enter__(self) -> "PyocdGdbServer":
        return self.start()

    def __exit__(self, *_exc: object) -> None:
        self.close()
