"""One GDB/MI session with a target (QEMU's GDB stub or `pyocd gdbserver`), every exchange logged.

gdb runs as a ManagedProcess (so it can never outlive the harness) and pygdbmi's IoManager
parses its MI output. Each command carries a token and waits for *its* result record with a
timeout, so a slow answer is never mistaken for another command's, a hung target becomes a
TimeoutExpired, and a dead gdb or target becomes a TargetError instead of a hang. The whole
conversation goes to the transcript (mi.log), the evidence when a run goes wrong.
"""

from __future__ import annotations

import itertools
import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pygdbmi.IoManager import IoManager

from hil.base.no_follow import no_follow
from hil.base.atomic import file_mode, room_error, write_bytes
from hil.base.errors import TargetError, TimeoutExpired
from hil.target.mi_records import StopEvent, mi_quote, render, stop_event
from hil.target.process import TERMINATE_GRACE_S, ManagedProcess

# pygdbmi waits this long for more output after each burst (its 0.2 s default costs 0.2 s a command);
# nothing here needs the wait, since every command waits for its own result record, so it is kept just
# above 0 (0 turns pygdbmi's early return off: each read then waits its whole timeout).
MI_QUIET_S = 0.001
# Longest single wait on gdb's stdout, so a dead gdb is noticed within it.
PUMP_S = 0.25
# Bytes per -data-read-memory-bytes: small enough to keep each command well inside its timeout.
READ_CHUNK = 64 * 1024
# Bytes per -data-write-memory-bytes (sent as hex: twice as many characters on gdb's stdin).
WRITE_CHUNK = 16 * 1024
# Seconds a gdb busy with an unanswered command gets after SIGTERM before SIGKILL (it reads no -gdb-exit).
BUSY_GRACE_S = 0.5
class GdbMiSession:
    """gdb (`--interpreter=mi3`) with one ELF loaded, driven command by command."""

    def __init__(
        self,
        gdb_path: str,
        elf: Path,
        transcript_path: Path,
        *,
        command_timeout: float = 10.0,
        name: str = "gdb",
    ) -> None:
        self.elf = Path(elf)
        self.transcript_path = Path(transcript_path)
        self.command_timeout = command_timeout
        self.name = name
        if not self.elf.is_file():
            raise TargetError(f"{name}: ELF not found: {self.elf}")
        argv = [gdb_path, "--nx", "--quiet", "--interpreter=mi3", str(self.elf)]
        # gdb's stderr shares the transcript, so its warnings sit next to the command that caused them.
        self._process = ManagedProcess(argv, name, self.transcript_path, pipes=True).start()
        popen = self._process.popen
        assert popen is not None and popen.stdin is not None and popen.stdout is not None
        self._io = IoManager(popen.stdin, popen.stdout, None, MI_QUIET_S)
        self._transcript = open(self.transcript_path, "ab", buffering=0, opener=no_follow)
        self._tokens = itertools.count(1)
        self._results: dict[int, dict[str, Any]] = {}
        self._events: list[dict[str, Any]] = []
        self._streams: list[str] = []
        self._closed = False
        self._unanswered: str | None = None  # the command gdb is still busy with (a signal or a timeout left it)
        # What a stop means to the board (hil.target.guest_exit: a stop at the exit function is the exit).
        self.stop_filter: Callable[[StopEvent], StopEvent] | None = None
        try:
            # Asynchronous MI: gdb keeps reading commands while the target runs, so -exec-interrupt
            # works (with the default synchronous mode gdb ignores stdin until the target stops).
            self.command("-gdb-set mi-async on")
            self.command("-gdb-set confirm off")
        except BaseException:
            self.close()
            raise

    # -- plumbing --------------------------------------------------------------------------

    @property
    def alive(self) -> bool:
        return self._process.alive

    @property
    def pid(self) -> int | None:
        return self._process.pid

    def _note(self, text: str) -> None:
        try:
            self._transcript.write(text.encode("utf-8", errors="replace") + b"\n")
        except (OSError, ValueError):
            pass

    def _pump(self, timeout: float) -> None:
        """Read what gdb has said within `timeout` s and file each record where it belongs."""
        try:
            records = self._io.get_gdb_response(timeout_sec=max(0.0, timeout), raise_error_on_timeout=False)
        except (OSError, ValueError) as exc:
            raise self._died(f"reading its output failed: {exc}") from exc
        for record in records:
            self._note(f"<- {render(record)}")
            kind = record.get("type")
            if kind == "result" and record.get("token") is not None:
                self._results[int(record["token"])] = record
            elif kind in ("notify", "log"):
                if kind == "notify" and record.get("message") == "running":
                    self._events.clear()  # the target resumed: older stops are history
                self._events.append(record)
                if kind == "log":
                    self._streams.append(str(record.get("payload") or ""))
            elif kind in ("console", "target", "output"):
                self._streams.append(str(record.get("payload") or ""))

    def _died(self, while_doing: str) -> TargetError:
        status = self._process.returncode
        return TargetError(
            f"{self.name} exited (status {status}) {while_doing} (transcript: {self.transcript_path})"
        )

    def command(self, mi_command: str, timeout: float | None = None) -> dict[str, Any]:
        """Send one MI command and return its result record; ^error raises TargetError with gdb's message."""
        if self._closed:
            raise TargetError(f"{self.name}: session already closed, cannot send '{mi_command}'")
        timeout = self.command_timeout if timeout is None else timeout
        token = next(self._tokens)
        self._streams.clear()
        self._note(f"-> {token}{mi_command}")
        self._unanswered = mi_command
        try:
            self._io.write(f"{token}{mi_command}", timeout_sec=timeout, read_response=False)
        except (OSError, ValueError) as exc:
            raise self._died(f"before it could take '{mi_command}': {exc}") from exc
        deadline = time.monotonic() + timeout
        while token not in self._results:
            remaining = deadline - time.monotonic()
            if not self._process.alive:
                self._pump(0)
                if token in self._results:
                    break
                raise self._died(f"while running '{mi_command}'")
            if remaining <= 0:
                raise TimeoutExpired(
                    f"{self.name}: no answer to '{mi_command}' within {timeout:g} s"
                    f" (transcript: {self.transcript_path})"
                )
            self._pump(min(PUMP_S, remaining))
        result = self._results.pop(token)
        self._unanswered = None
        if result.get("message") == "error":
            msg = (result.get("payload") or {}).get("msg", "unknown error")
            raise TargetError(f"{self.name}: '{mi_command}' failed: {msg} (transcript: {self.transcript_path})")
        return result

    def console(self, cli_command: str, timeout: float | None = None) -> str:
        """Run a CLI command (`monitor ...`, `dump ...`) and return the text it printed."""
        self.command(f"-interpreter-exec console {mi_quote(cli_command)}", timeout)
        return "".join(self._streams)

    # -- target control --------------------------------------------------------------------

    def connect(self, host: str, port: int, timeout: float | None = None) -> None:
        """Attach to a GDB stub (`-target-select remote`)."""
        self.command(f"-target-select remote {host}:{port}", timeout)

    def download(self, timeout: float = 120.0) -> None:
        """Write the ELF's loadable sections to the target: the flash step on QEMU."""
        self.command("-target-download", timeout)

    def reset(self, monitor: str = "system_reset") -> None:
        """Reset the target through the stub's monitor command, then drop gdb's stale register cache."""
        self.console(f"monitor {monitor}")
        self.console("maintenance flush register-cache")

    def break_insert(self, location: str, *, temporary: bool = False) -> int:
        """Set a breakpoint at a function or file:line; a location gdb cannot resolve is an error naming it.

        `temporary` (`-t`): gdb deletes it when it is hit, for one-shot stops such as the run configuration.
        """
        try:
            result = self.command(f"-break-insert {'-t ' if temporary else ''}{mi_quote(location)}")
        except TargetError as exc:
            raise TargetError(f"breakpoint location '{location}' cannot be resolved in {self.elf}: {exc}") from exc
        bkpt = (result.get("payload") or {}).get("bkpt") or {}
        number = int(bkpt.get("number", 0))
        if bkpt.get("pending") or str(bkpt.get("addr", "")).startswith("<PENDING"):
            self.command(f"-break-delete {number}")
            raise TargetError(f"breakpoint location '{location}' is not in {self.elf} (gdb made it pending)")
        return number

    def continue_until_stop(self, timeout: float) -> StopEvent:
        """Resume the target and wait up to `timeout` s for it to stop, exit or disconnect.

        Raises TimeoutExpired when it keeps running (the caller decides whether to interrupt)
        and TargetError when gdb itself dies.
        """
        self._events.clear()
        self.command("-exec-continue")
        return self.wait_for_stop(timeout, waiting_for="-exec-continue")

    def interrupt(self, timeout: float = 5.0) -> StopEvent:
        """Halt a running target (`-exec-interrupt`) and return the resulting stop."""
        self.command("-exec-interrupt", timeout)
        return self.wait_for_stop(timeout, waiting_for="-exec-interrupt")

    def wait_for_stop(self, timeout: float, *, waiting_for: str = "the target") -> StopEvent:
        """The next stop, exit or disconnect among gdb's async records."""
        deadline = time.monotonic() + timeout
        while True:
            stop = self._take_stop()
            if stop is not None:
                stop = self.stop_filter(stop) if self.stop_filter is not None else stop
                self._note(f"## stop: {stop.describe()}")
                return stop
            if not self._process.alive:
                self._pump(0)
                stop = self._take_stop()
                if stop is not None:
                    return stop
                raise self._died(f"while waiting for the target to stop after {waiting_for}")
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutExpired(
                    f"{self.name}: target did not stop within {timeout:g} s after {waiting_for}"
                    f" (transcript: {self.transcript_path})"
                )
            self._pump(min(PUMP_S, remaining))

    def _take_stop(self) -> StopEvent | None:
        """Consume async records up to the first that ends a run, and turn it into a StopEvent."""
        while self._events:
            record = self._events.pop(0)
            payload = record.get("payload") or {}
            message = record.get("message")
            if record.get("type") == "notify" and message == "stopped":
                return stop_event(payload)
            if record.get("type") == "notify" and message == "thread-group-exited" and "exit-code" not in payload:
                return StopEvent("disconnected", detail="the GDB stub went away")
            if record.get("type") == "log" and "Remote connection closed" in str(payload):
                return StopEvent("disconnected", detail="Remote connection closed")
        return None

    # -- reading the target ----------------------------------------------------------------

    def evaluate(self, expression: str) -> str:
        """gdb's printed value of a C expression."""
        result = self.command(f"-data-evaluate-expression {mi_quote(expression)}")
        return str((result.get("payload") or {}).get("value", ""))

    def evaluate_int(self, expression: str) -> int:
        """The expression's value as an unsigned integer (pointers included)."""
        value = self.evaluate(f"(unsigned long long)({expression})")
        try:
            return int(value.split()[0], 0)
        except (ValueError, IndexError) as exc:
            raise TargetError(f"{self.name}: '{expression}' is not an integer: gdb printed {value!r}") from exc

    def register_int(self, name: str) -> int:
        """A core register's raw 32-bit value, by name (`xpsr`, `lr`, ...).

        Why not `evaluate_int("$xpsr")` alone: pyOCD's target description gives xPSR a flags type, and gdb
        refuses to cast a flags value to an integer, so the cast that serves every other register fails
        there. Then the register's number is looked up and its value asked in hex, which has no type to refuse.
        """
        try:
            return self.evaluate_int(f"${name}") & 0xFFFFFFFF
        except TargetError:
            pass
        names = list((self.command("-data-list-register-names").get("payload") or {}).get("register-names", []))
        if name not in names:
            raise TargetError(f"{self.name}: the target has no register '{name}' (gdb names {len(names)})")
        payload = self.command(f"-data-list-register-values x {names.index(name)}").get("payload") or {}
        values = payload.get("register-values") or [{}]
        try:
            return int(str(values[0].get("value", "")), 16) & 0xFFFFFFFF
        except ValueError as exc:
            raise TargetError(f"{self.name}: register '{name}' read as {values[0]!r}, not a hex value") from exc

    def write_int(self, lvalue: str, value: int) -> None:
        """Assign `value` to a C lvalue in the target's memory (the core must be halted).

        Goes through `-data-evaluate-expression "lvalue = value"`, so the transcript shows each
        write; gdb answers with the value now stored, which must read back as `value`.
        """
        stored = self.evaluate(f"{lvalue} = {value}")
        try:
            ok = int(stored.split()[0], 0) == value
        except (ValueError, IndexError):
            ok = False
        if not ok:
            raise TargetError(
                f"{self.name}: writing {value} to '{lvalue}' left {stored!r} (transcript: {self.transcript_path})"
            )

    def read_memory(self, address: int, size: int, chunk: int = READ_CHUNK) -> bytes:
        """`size` bytes from `address` through -data-read-memory-bytes, in chunks."""
        out = bytearray()
        while len(out) < size:
            start = address + len(out)
            count = min(chunk, size - len(out))
            result = self.command(f"-data-read-memory-bytes 0x{start:x} {count}")
            blocks = (result.get("payload") or {}).get("memory") or []
            data = b"".join(bytes.fromhex(block.get("contents", "")) for block in blocks)
            if len(data) != count:
                raise TargetError(
                    f"{self.name}: read {len(data)} of {count} bytes at 0x{start:08x}"
                    f" (transcript: {self.transcript_path})"
                )
            out += data
        return bytes(out)

    def write_memory(self, address: int, data: bytes, chunk: int = WRITE_CHUNK) -> None:
        """Write `data` at `address` through -data-write-memory-bytes, in chunks, then read it back:
        a write the target dropped (a wrong address, a bus error swallowed by the stub) is an error."""
        for start in range(0, len(data), chunk):
            part = data[start:start + chunk]
            self.command(f"-data-write-memory-bytes 0x{address + start:x} {part.hex()}")
        if self.read_memory(address, len(data)) != data:
            raise TargetError(
                f"{self.name}: the {len(data)} bytes written at 0x{address:08x} did not read back the same"
                f" (transcript: {self.transcript_path})"
            )

    def dump_memory(self, address: int, size: int, path: Path, timeout: float = 60.0) -> Path:
        """Write [address, address+size) to `path` with gdb's `dump binary memory`, whole or not at all.

        A dump the disk refused (gdb says nothing, or only that the write failed) is a WriteError naming
        `path` and the errno (hil.base.atomic.room_error), the machine's fault, not the target's.

        gdb 13 takes the file name up to the first blank and keeps quotes literally, so the dump
        goes to a blank-free temporary file that is then moved into place.
        """
        path = Path(path).resolve()
        path.parent.mkdir(parents=True, exist_ok=True)
        scratch = path.parent if not any(ch.isspace() for ch in str(path.parent)) else Path(tempfile.gettempdir())
        fd, name = tempfile.mkstemp(prefix=".hil-dump-", suffix=".partial", dir=scratch)
        os.fchmod(fd, file_mode())  # gdb writes into this file; once renamed it is an artifact like any other
        os.close(fd)
        partial = Path(name)
        try:
            try:
                self.console(f"dump binary memory {partial} 0x{address:x} 0x{address + size:x}", timeout)
            except TargetError as exc:
                refused = room_error(path, size)
                if refused is None:
                    raise
                raise refused from exc
            written = partial.stat().st_size
            if written != size:  # gdb's stdio drops a write the disk refused and answers ^done
                partial.unlink()
                raise room_error(path, size) or TargetError(
                    f"{self.name}: dump wrote {written} of {size} bytes at 0x{address:08x}"
                    f" (transcript: {self.transcript_path})"
                )
            if partial.parent == path.parent:
                os.replace(partial, path)
            else:
                write_bytes(path, partial.read_bytes())
        finally:
            partial.unlink(missing_ok=True)
        return path

    # -- shutdown --------------------------------------------------------------------------

    def close(self, timeout: float = 2.0) -> None:
        """`-gdb-exit`, then make sure gdb is gone; safe on every path and twice.

        A gdb still inside a command (a `dump` the user interrupted with Ctrl-C or SIGTERM, one past its
        timeout) reads no other until that one ends: asked to exit, it made an interrupted read-out
        wait 2 s for no answer and 2 s more for the exit (4.1 s). It is ended at once instead."""
        if self._closed:
            return
        if self._unanswered is not None:
            self._note(f"[closing while '{self._unanswered}' is unanswered: gdb is ended, not asked to exit]")
        elif self._process.alive:
            try:
                self.command("-gdb-exit", timeout)
            except TargetError:
                pass  # already dying, or exited before answering: close() below settles it
        self._closed = True
        if self._unanswered is None:
            try:
                self._process.wait(timeout)
            except TargetError:
                pass
        self._process.close(grace=BUSY_GRACE_S if self._unanswered is not None else TERMINATE_GRACE_S)
        try:
            self._transcript.close()
        except OSError:
            pass

    def __enter__(self) -> "GdbMiSession":
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()
