"""A labgrid place held for a whole session: reserved, waited for, acquired, read, and always released.

A place bundles one board's resources on some exporter host. The harness reserves it (so competing
jobs queue fairly in the coordinator's scheduler instead of polling), waits up to a timeout while
saying who holds it, acquires it, and turns its resources into board-file settings:

- the console: a `NetworkSerialPort` (an exporter's `USBSerialPort`/`RawSerialPort` behind ser2net, or one
  exported as is) -> `serial.url = rfc2217://HOST:PORT?ign_set_control` (a pty or a VCOM may not answer
  modem-control requests, which pyserial would otherwise wait for);
- the debugger: a `NetworkService` named `pyocd` (a `pyocd server` on the exporter host) or, failing that,
  an exported MCU-Link (`NetworkUSBDebugger`) with `pyocd server` on its default port there ->
  `pyocd.probe_id = remote:HOST:PORT`, which flashing and `pyocd gdbserver` both use.

labgrid keeps a place acquired until someone releases it; it does not notice a dead client. The
harness releases on every exit path it can see (normal end, exception, SIGTERM unwound as
KeyboardInterrupt, interpreter exit). A session killed outright (SIGKILL) leaves the place acquired
under its labgrid identity, `HOST/LOGIN.hilPID`; a later session on that host sees the pid is gone and
takes the place back with labgrid's own `release-from HOLDER` (atomic: only if that holder still holds
it) and cancels the dead session's reservation. A live holder, or one on another host, is waited for.
"""

from __future__ import annotations

import atexit
import logging
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hil.base import log
from hil.base.errors import TimeoutExpired
from hil.lab.labgrid_cli import LabError, LabgridClient, PlaceState, holder_pid

LOG = logging.getLogger(__name__)

PYOCD_SERVER_PORT = 5555  # `pyocd server`'s default port
# Seconds of one `labgrid-client wait` slice; between slices the holder is looked up and reported.
WAIT_SLICE_S = 3.0

_held_lock = threading.Lock()
_held: list["PlaceHold"] = []


def pid_alive(pid: int) -> bool:
    """True while `pid` runs on this host (a zombie counts as gone: it holds nothing any more)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        state = Path(f"/proc/{pid}/stat").read_text(errors="replace").rsplit(")", 1)[-1].split()[0]
    except (OSError, IndexError):
        return True
    return state not in ("Z", "X")


@dataclass
class PlaceLease:
    """What an acquired place gives the board, and what the manifest records about it."""

    place: str
    coordinator: str
    holder: str
    exporter: str | None = None
    exporter_host: str | None = None
    console_url: str | None = None
    probe_id: str | None = None
    waited_s: float = 0.0
    took_over: str | None = None
    resources: list[str] = field(default_factory=list)

    def overrides(self) -> dict[str, Any]:
        """Board-file settings: the console and probe the place offers, and a [lab] record for the manifest."""
        found: dict[str, Any] = {"lab.place": self.place, "lab.coordinator": self.coordinator,
                                 "lab.holder": self.holder, "lab.exporter": self.exporter, "lab.console": self.console_url,
                                 "lab.exporter_host": self.exporter_host, "lab.place_waited_s": round(self.waited_s, 3)}
        if self.took_over:
            found["lab.took_over_from"] = self.took_over
        if self.console_url:
            found["serial.url"] = self.console_url
        if self.probe_id:
            found["pyocd.probe_id"] = self.probe_id
        return {key: value for key, value in found.items() if value is not None}


def lease_from(state: PlaceState, coordinator: str, holder: str) -> PlaceLease:
    """Read the console URL, the remote probe and the exporter out of an acquired place's resources."""
    lease = PlaceLease(state.name, coordinator, holder)
    for res in state.resources:
        lease.resources.append(f"{res.exporter}/{res.group}/{res.cls}/{res.name}")
        host = res.params.get("host") or res.params.get("address")
        if res.cls == "NetworkSerialPort" and lease.console_url is None:
            scheme = "socket" if res.params.get("protocol") == "raw" else "rfc2217"
            suffix = "?ign_set_control" if scheme == "rfc2217" else ""
            lease.console_url = f"{scheme}://{host}:{res.params['port']}{suffix}"
            lease.exporter, lease.exporter_host = res.exporter, host
        elif res.cls == "NetworkService" and res.name == "pyocd":
            lease.probe_id = f"remote:{host}:{res.params.get('port', PYOCD_SERVER_PORT)}"
        elif res.cls == "NetworkUSBDebugger" and lease.probe_id is None:
            lease.probe_id = f"remote:{host}:{PYOCD_SERVER_PORT}"
        if lease.exporter is None:
            lease.exporter, lease.exporter_host = res.exporter, host
    return lease


class PlaceHold:
    """Reserve, wait for, acquire and release one place (see the module docstring); a context manager."""

    def __init__(self, place: str, coordinator: str, *, timeout: float = 600.0,
                 report: Callable[[str], None] | None = None, client: LabgridClient | None = None) -> None:
        self.place = place
        self.coordinator = coordinator
        self.timeout = timeout
        self.report = report or log.warning
        self.client = client or LabgridClient(coordinator)
        self.token: str | None = None
        self.acquired = False
        self.lease: PlaceLease | None = None

    def acquire(self) -> PlaceLease:
        start = time.monotonic()
        self.client.show(self.place)  # an unknown place or an unreachable coordinator fails here, at once
        with _held_lock:
            _held.append(self)
        try:
            self.token = self.client.reserve(self.place)
            took_over = self._wait_allocated(start)
            self.client.acquire(self.token)
            self.acquired = True
            state = self.client.show(self.place)
        except BaseException:
            self.release()
            raise
        self.lease = lease_from(state, self.coordinator, self.client.identity)
        self.lease.waited_s, self.lease.took_over = time.monotonic() - start, took_over
        if self.lease.console_url is None:
            self.release()
            raise LabError(f"place {self.place}: no NetworkSerialPort among its resources "
                           f"({', '.join(self.lease.resources) or 'none'}); the harness needs the console")
        return self.lease

    def _wait_allocated(self, start: float) -> str | None:
        """Poll our reservation until the coordinator allocates the place; report and clean up holders."""
        assert self.token is not None
        reported: str | None = None
        took_over: str | None = None
        while True:
            left = self.timeout - (time.monotonic() - start)
            state = self.client.wait(self.token, timeout=max(0.5, min(WAIT_SLICE_S, left)))
            if state == "allocated":
                return took_over
            if state in ("expired", "invalid"):
                raise LabError(f"place {self.place}: reservation {self.token} became {state}")
            holder = self.client.show(self.place).acquired
            if holder is not None and holder != reported:
                self.report(f"place {self.place} is held by {holder}; waiting up to {self.timeout:g} s")
                reported = holder
            if self._take_back_from_dead(holder):
                took_over = holder
                continue
            if time.monotonic() - start >= self.timeout:
                raise TimeoutExpired(
                    f"place {self.place} is still held by {holder or 'an earlier reservation'} after "
                    f"{time.monotonic() - start:.1f} s (coordinator {self.coordinator}; --hil-place-timeout)"
                )

    def _take_back_from_dead(self, holder: str | None) -> bool:
        """Release a place held by a harness session of this host whose process is gone."""
        pid = holder_pid(holder)
        if holder is None or pid is None or pid_alive(pid):
            return False
        self.client.release_from(self.place, holder)
        for res in self.client.reservations():
            if res.owner == holder:
                self.client.cancel(res.token)
        self.report(f"place {self.place}: its holder {holder} is dead (pid {pid} is gone); released it")
        return True

    def release(self) -> None:
        """Release the place and cancel the reservation; safe to call twice, errors only logged."""
        token, self.token = self.token, None
        acquired, self.acquired = self.acquired, False
        steps = ([("release", lambda: self.client.release(self.place))] if acquired else []) + (
            [("cancel the reservation", lambda: self.client.cancel(token))] if token else [])
        for what, step in steps:  # each even when the one before failed
            try:
                step()
            except (LabError, TimeoutExpired) as exc:
                LOG.warning("place %s: could not %s: %s", self.place, what, exc)
        with _held_lock:
            if self in _held:
                _held.remove(self)

    def __enter__(self) -> PlaceLease:
        return self.acquire()

    def __exit__(self, *_exc: object) -> None:
        self.release()


def release_all() -> None:
    """Release every place still held; runs at interpreter exit."""
    with _held_lock:
        holds = list(_held)
    for hold in holds:
        hold.release()


atexit.register(release_all)
