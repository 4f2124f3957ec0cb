"""The target's console: read in a thread from before the target runs, every byte kept in serial.log.

One reader serves every board: pyserial's `serial_for_url` opens `socket://` (QEMU's UART),
`/dev/tty*`, `hwgrep://` and `rfc2217://` alike. Bytes are appended to the log the moment
they arrive (a crash later in the run still leaves the evidence), and `expect()` gives tests
a timeout error that shows what the target did say and where the full log is.
"""

from __future__ import annotations

import codecs
import re
import select
import socket
import threading
import time
from pathlib import Path
from typing import IO

import serial
from serial.urlhandler import protocol_socket

from hil.base.no_follow import no_follow
from hil.base.errors import TargetError, TimeoutExpired

# How long one read blocks, so the thread notices close() promptly.
READ_TIMEOUT_S = 0.05
# The most one read of a socket console takes.
SOCKET_CHUNK = 65536
# Lines of console shown in error messages.
TAIL_LINES = 10


class SerialReader:
    """Capture one serial port into `log_path` and memory, and let callers wait for patterns.

    `reconnect=True` is for USB virtual COM ports that vanish while the board resets: when the
    port is lost the reader reopens the same URL every `reconnect_delay` s for up to
    `reconnect_timeout` s, writing a `[hil serial: ...]` marker line into the log (never into
    `text`, so markers cannot satisfy or break an `expect`). pyserial's open() discards input
    that arrives while it opens, so bytes sent in that instant after a reconnect are lost;
    the first open is safe because the target is still halted then.
    """

    def __init__(
        self,
        url: str,
        log_path: Path,
        *,
        baudrate: int = 115200,
        open_timeout: float = 10.0,
        reconnect: bool = False,
        reconnect_timeout: float = 30.0,
        reconnect_delay: float = 0.2,
        name: str = "serial",
    ) -> None:
        self.url = url
        self.log_path = Path(log_path)
        self.baudrate = baudrate
        self.open_timeout = open_timeout
        self.reconnect = reconnect
        self.reconnect_timeout = reconnect_timeout
        self.reconnect_delay = reconnect_delay
        self.name = name
        self.reconnects = 0
        self.end_reason: str | None = None
        self.log_error: OSError | None = None  # why serial.log stops short of `text`, if it does
        self._port: serial.SerialBase | None = None
        self._log: IO[bytes] | None = None
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        self._ended = threading.Event()
        self._cond = threading.Condition()
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._text = ""
        self._nbytes = 0
        self._cursor = 0
        self._last_byte = b"\n"

    # -- lifecycle -------------------------------------------------------------------------

    def start(self) -> "SerialReader":
        """Open the port (retrying until `open_timeout`) and start reading; call before the target runs."""
        if self._thread is not None:
            raise TargetError(f"{self.name} {self.url}: reader already started")
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self._log = open(self.log_path, "ab", buffering=0, opener=no_follow)
        try:
            self._port = self._open(time.monotonic() + self.open_timeout)
        except BaseException:
            self._log.close()
            self._log = None
            raise
        self._thread = threading.Thread(target=self._read_loop, name=f"{self.name}-reader", daemon=True)
        self._thread.start()
        return self

    def close(self, timeout: float = 2.0) -> None:
        """Stop reading and release the port; safe to call twice."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)
        self._close_port()
        self._mark_ended("closed by the harness")
        if self._log is not None and (self._thread is None or not self._thread.is_alive()):
            self._log.close()
            self._log = None

    def log_to(self, log_path: Path) -> None:
        """Log into `log_path` from now on, `text` starting afresh: the next run of a target kept between
        runs (hil.boards.qemu_keep), whose console stays attached. Its CPU is halted meanwhile, so no
        byte falls between the two logs."""
        log_path = Path(log_path)
        log_path.parent.mkdir(parents=True, exist_ok=True)
        new = open(log_path, "ab", buffering=0, opener=no_follow)
        with self._cond:
            old, self._log, self.log_path = self._log, new, log_path
            self._text, self._cursor, self._nbytes, self._last_byte, self.log_error = "", 0, 0, b"\n", None
        if old is not None:
            old.close()

    def __enter__(self) -> "SerialReader":
        return self.start() if self._thread is None else self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    # -- what was read ---------------------------------------------------------------------

    @property
    def text(self) -> str:
        """Everything read so far, decoded as UTF-8 (bad bytes replaced, never an error)."""
        with self._cond:
            return self._text

    @property
    def lines(self) -> list[str]:
        return self.text.splitlines()

    @property
    def bytes_read(self) -> int:
        return self._nbytes

    @property
    def ended(self) -> bool:
        """True once reading has stopped for good (port gone and not reopened, or closed)."""
        return self._ended.is_set()

    def local_port(self) -> int | None:
        """The local TCP port of a `socket://` console (who QEMU's UART should say it serves); else None."""
        sock = getattr(self._port, "_socket", None)
        if not isinstance(sock, socket.socket):
            return None
        try:
            return int(sock.getsockname()[1])
        except (OSError, IndexError, TypeError):
            return None

    def tail(self, n: int = TAIL_LINES) -> list[str]:
        return self.lines[-n:] if n > 0 else []

    def describe_tail(self, n: int = TAIL_LINES) -> str:
        """The last lines as an indented block for error messages."""
        lines = self.tail(n)
        if not lines:
            return "  (no console output)"
        return "\n".join(f"  | {line}" for line in lines)

    def wait_ended(self, timeout: float) -> bool:
        """Wait until the port closes (e.g. QEMU exited); True if it did within `timeout` s."""
        return self._ended.wait(timeout)

    def skip_to_end(self) -> int:
        """Make the next `expect()` look only at what arrives from now on; returns that position in `text`.

        For a line that must come from this boot after a given moment (the run configuration's
        echo), not from an earlier boot whose output is still in the log.
        """
        with self._cond:
            self._cursor = len(self._text)
            return self._cursor

    def expect(self, pattern: str | re.Pattern[str], timeout: float) -> re.Match[str]:
        """Wait for `pattern` (a regex; str is compiled) in the console after the previous match.

        Successive calls move forward through the output. Raises TimeoutExpired after `timeout`
        s, or TargetError at once when the port has closed and the pattern never came; both
        messages name the pattern, the last console lines and the log.
        """
        regex = re.compile(pattern) if isinstance(pattern, str) else pattern
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                match = regex.search(self._text, self._cursor)
                if match is not None:
                    self._cursor = match.end()
                    return match
                if self._ended.is_set():
                    raise TargetError(
                        f"{self.name} {self.url}: pattern {regex.pattern!r} never appeared: the port closed"
                        f" ({self.end_reason}); last console lines:\n{self.describe_tail()}\n(log: {self.log_path})"
                    )
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise TimeoutExpired(
                        f"{self.name} {self.url}: pattern {regex.pattern!r} not seen within {timeout:g} s;"
                        f" last console lines:\n{self.describe_tail()}\n(log: {self.log_path})"
                    )
                self._cond.wait(remaining)

    # -- the reader thread -----------------------------------------------------------------

    def _open(self, deadline: float) -> serial.SerialBase:
        """Open the URL, retrying until `deadline`: the port may not exist yet (QEMU, USB re-enumeration)."""
        while True:
            try:
                return serial.serial_for_url(self.url, baudrate=self.baudrate, timeout=READ_TIMEOUT_S)
            except (serial.SerialException, OSError, ValueError) as exc:
                if isinstance(exc, ValueError) or time.monotonic() >= deadline or self._stop.is_set():
                    raise TargetError(
                        f"{self.name}: cannot open serial port {self.url}: {exc} (log: {self.log_path})"
                    ) from exc
            self._stop.wait(self.reconnect_delay if self.reconnect else 0.05)

    def _read_loop(self) -> None:
        while not self._stop.is_set():
            port = self._port
            try:
                data = _read_some(port) if port is not None else b""
            except (serial.SerialException, OSError, TypeError, AttributeError) as exc:
                self._close_port()
                if self._stop.is_set():
                    break
                if self.reconnect and self._reopen(exc):
                    continue
                self._mark_ended(f"port lost: {exc}")
                return
            if data:
                self._append(data)
        self._mark_ended("closed by the harness")

    def _reopen(self, cause: BaseException) -> bool:
        """Reopen the same URL after the port vanished; True when reading can go on."""
        self._marker(f"port lost ({cause}); reopening {self.url} for up to {self.reconnect_timeout:g} s")
        try:
            self._port = self._open(time.monotonic() + self.reconnect_timeout)
        except TargetError as exc:
            self._marker(f"gave up reopening: {exc.__cause__ or exc}")
            return False
        self.reconnects += 1
        self._marker(f"reopened {self.url} (reconnect {self.reconnects})")
        return True

    def _write_log(self, data: bytes) -> None:
        """Append to serial.log; a disk that refuses (full, read-only) ends the log, never the reading:
        the console stays in memory for the run, and `log_error` says why the log stops short."""
        log = self._log
        if log is None or self.log_error is not None:
            return
        try:
            view = memoryview(data)
            while view:  # unbuffered: on disk at once; a disk that fills mid-write takes a part, then says why
                written = log.write(view)
                if not written:
                    break
                view = view[written:]
        except OSError as exc:
            self.log_error = exc

    def _append(self, data: bytes) -> None:
        self._write_log(data)
        chunk = self._decoder.decode(data)
        with self._cond:
            self._nbytes += len(data)
            self._last_byte = data[-1:]
            self._text += chunk
            self._cond.notify_all()

    def _marker(self, message: str) -> None:
        """A harness note in the log, on a line of its own."""
        log = self._log
        if log is None:
            return
        lead = b"" if self._last_byte == b"\n" else b"\n"
        self._write_log(lead + f"[hil serial: {message}]\n".encode())
        self._last_byte = b"\n"

    def _mark_ended(self, reason: str) -> None:
        with self._cond:
            if not self._ended.is_set():
                self.end_reason = reason
                tail = self._decoder.decode(b"", final=True)
                self._text += tail
                self._ended.set()
            self._cond.notify_all()

    def _close_port(self) -> None:
        port, self._port = self._port, None
        if port is not None:
            try:
                if self.reconnect or not _close_socket_at_once(port):
                    port.close()
            except (serial.SerialException, OSError):
                pass


def _read_some(port: serial.SerialBase) -> bytes:
    """One byte at least, all that is waiting at most: a disconnect then loses nothing.

    A `socket://` port (QEMU's UART) says 1 for `in_waiting` whatever is waiting, so it is read from its
    socket directly: byte by byte, a streamed ETDump (hil.target.etdump_stream) came in at ~40 KB/s. Only
    that kind: an `rfc2217://` port (ser2net, a labgrid place) has a socket too, but carries telnet
    negotiation on it that pyserial's own thread reads and strips; read beside it, the console lost its lines.
    """
    sock = getattr(port, "_socket", None)
    if not isinstance(port, protocol_socket.Serial) or not isinstance(sock, socket.socket):
        return port.read(max(1, port.in_waiting))
    ready, _, _ = select.select([sock], [], [], READ_TIMEOUT_S)
    if not ready:
        return b""
    data = sock.recv(SOCKET_CHUNK)
    if not data:
        raise serial.SerialException("socket disconnected")
    return data


def _close_socket_at_once(port: serial.SerialBase) -> bool:
    """Close a `socket://` port without pyserial's pause; False for any other kind of port.

    pyserial's socket close() sleeps 0.3 s after closing, to give the server time before a quick
    reconnect; a reader that will not reconnect (QEMU's UART: the run is over) has nothing to wait
    for, and that pause was a third of a QEMU run's harness time.
    """
    sock = getattr(port, "_socket", None)
    if not isinstance(sock, socket.socket):
        return False
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass  # the peer is gone already
    sock.close()
    port._socket = None
    port.is_open = False
    return True
