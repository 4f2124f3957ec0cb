"""Flash and reset the RT700 through pyOCD's Python API, with errors a lab user can act on.

pyOCD's own helpers are built for an interactive terminal: with several probes and no id,
`ConnectHelper.session_with_chosen_probe` asks on stdin, and a unique id is a *substring*
match. The harness runs unattended, so it lists the probes itself (non-blocking), picks one by
its exact id, and builds the `Session` on that probe object. Every call that talks to the probe
runs under a timeout, and one flash failure is retried once on a fresh session, recorded in
the `FlashReport` rather than hidden.

All pyOCD access goes through `_pyocd_api()`: it is the only seam the unit tests replace (with
tests/unit/fake_pyocd.py), and it keeps `import pyocd` (~0.6 s) off the import path.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Callable, TypeVar

from hil.config.board_config import BoardConfig
from hil.base.errors import BoardConfigError, HilError, TargetError, TimeoutExpired
from hil.probe.flash_check import FlashDecision, compare

LOG = logging.getLogger(__name__)

T = TypeVar("T")

PACK_HINT = (
    "install NXP's device pack with `pyocd pack install {target}` (needs the network), or download "
    "the MIMXRT798S DFP (.pack) and set [pyocd].pack in the board file or pass --hil-pack PATH; "
    "`hil doctor --board rt700` checks it (README, section \"Lab bench\")"
)


def _pyocd_api() -> SimpleNamespace:
    """The pyOCD entry points the harness uses, imported on first use.

    Tests monkeypatch this function to return a fake with the same attribute names; nothing
    else in the harness imports pyOCD for probe access.
    """
    import pyocd
    from pyocd.core import exceptions
    from pyocd.core.helpers import ConnectHelper
    from pyocd.core.session import Session
    from pyocd.flash.file_programmer import FileProgrammer

    return SimpleNamespace(
        version=pyocd.__version__,
        ConnectHelper=ConnectHelper,
        Session=Session,
        FileProgrammer=FileProgrammer,
        exceptions=exceptions,
    )


@dataclass(frozen=True)
class ProbeInfo:
    """A connected debug probe as the user sees it in error messages and `hil doctor`."""

    unique_id: str
    description: str

    def __str__(self) -> str:
        return f"{self.unique_id} ({self.description})"


@dataclass
class FlashReport:
    """What flashing took: attempts (2 means the one retry was used), the errors seen, seconds."""

    probe_id: str
    target: str
    image: str
    attempts: int = 0
    errors: list[str] = field(default_factory=list)
    seconds: float = 0.0
    done: str = "programmed"  # or "skipped": the target held the image already (hil.probe.flash_check)
    why: str = ""

    @property
    def retried(self) -> bool:
        return self.attempts > 1


@dataclass(frozen=True)
class ProbeSettings:
    """The [pyocd] section of a board file, read once so every message names the same values."""

    board: str
    source: str
    target: str
    pack: str | None
    probe_id: str | None
    frequency_hz: int
    connect_timeout_s: float
    flash_timeout_s: float
    extra_options: dict[str, Any]

    @classmethod
    def from_config(cls, cfg: BoardConfig) -> "ProbeSettings":
        target = cfg.get("pyocd.target")
        if not target:
            raise BoardConfigError(f"board '{cfg.name}' ({cfg.source}): [pyocd].target is empty (e.g. mimxrt798sgfob)")
        pack = str(cfg.get("pyocd.pack", "") or "") or None
        if pack is not None:
            pack_path = Path(pack).expanduser()
            if not pack_path.is_absolute() and cfg.source is not None:
                pack_path = (Path(cfg.source).parent / pack_path)
            if not pack_path.is_file():
                raise BoardConfigError(
                    f"board '{cfg.name}' ({cfg.source}): [pyocd].pack = '{pack}' is not a file ({pack_path})"
                )
            pack = str(pack_path)
        return cls(
            board=cfg.name,
            source=str(cfg.source),
            target=str(target),
            pack=pack,
            probe_id=str(cfg.get("pyocd.probe_id", "") or "") or None,
            frequency_hz=int(cfg.get("pyocd.frequency_hz", 4_000_000)),
            connect_timeout_s=float(cfg.get("pyocd.connect_timeout_s", 20)),
            flash_timeout_s=float(cfg.get("pyocd.flash_timeout_s", 120)),
            extra_options=dict(cfg.get("pyocd.options", {}) or {}),
        )

    def session_options(self) -> dict[str, Any]:
        """pyOCD session options: the target, the pack, the clock, and a target left halted."""
        options: dict[str, Any] = {
            **self.extra_options,
            "target_override": self.target,
            "frequency": self.frequency_hz,
            # Closing the session must not start the firmware: the serial reader and the
            # GDB breakpoint come first, then the harness lets the target run.
            "resume_on_disconnect": False,
            "hide_programming_progress": True,
        }
        if self.pack:
            options["pack"] = self.pack
        return options


def _with_timeout(fn: Callable[[], T], timeout: float, what: str) -> T:
    """Run a blocking probe call in a worker thread and give up after `timeout` s.

    pyOCD's USB calls have no timeout of their own; a wedged probe would hang the run forever.
    The worker is a daemon thread: on a timeout it is abandoned (the process is failing anyway).
    """
    box: dict[str, Any] = {}

    def worker() -> None:
        try:
            box["value"] = fn()
        except BaseException as exc:  # re-raised in the caller's thread
            box["error"] = exc

    thread = threading.Thread(target=worker, name=f"pyocd: {what}", daemon=True)
    thread.start()
    thread.join(timeout)
    if thread.is_alive():
        raise TimeoutExpired(f"{what}: no answer from the probe in {timeout:g} s (unplug and replug the probe?)")
    if "error" in box:
        raise box["error"]
    return box["value"]


def list_probes(api: SimpleNamespace | None = None) -> list[ProbeInfo]:
    """Connected probes, without waiting for one to appear (pyOCD blocks forever by default)."""
    api = api or _pyocd_api()
    probes = api.ConnectHelper.get_all_connected_probes(blocking=False, print_wait_message=False)
    return [ProbeInfo(str(p.unique_id), str(p.description)) for p in probes]


REMOTE_PREFIX = "remote:"
REMOTE_HINT = ("on the probe's host, `pyocd server --port PORT --uid <probe id> --allow-remote` serves it "
               "(README, section \"A shared lab\")")


def is_remote(probe_id: str | None) -> bool:
    """`remote:HOST:PORT`: a probe served by `pyocd server` on another host (pyOCD's TCPClientProbe)."""
    return bool(probe_id) and str(probe_id).lower().startswith(REMOTE_PREFIX)


def remote_probe(probe_id: str, *, timeout: float = 10.0, api: SimpleNamespace | None = None) -> ProbeInfo:
    """Ask the `pyocd server` at `remote:HOST:PORT` which probe it serves; TargetError when none answers.

    pyOCD resolves a `remote:` id to a TCPClientProbe without contacting the server; the harness opens
    it once (hello, open, the probe's names, close) so a dead server fails here, at once and by name.
    """
    api = api or _pyocd_api()
    (probe,) = api.ConnectHelper.get_all_connected_probes(blocking=False, unique_id=probe_id,
                                                          print_wait_message=False)

    def ask() -> str:
        probe.open()
        try:
            return f"{probe.vendor_name} {probe.product_name}"
        finally:
            probe.close()

    try:
        description = _with_timeout(ask, timeout, f"asking the pyocd server at {probe_id}")
    except (OSError, api.exceptions.Error) as exc:
        raise TargetError(f"probe {probe_id}: no `pyocd server` answers ({type(exc).__name__}: {exc}); "
                          + REMOTE_HINT) from exc
    return ProbeInfo(str(probe.unique_id), f"{description}, via pyocd server")


def _choose_probe(settings: ProbeSettings, api: SimpleNamespace) -> Any:
    """The one probe this board means: by exact id, or the only one connected; a `remote:` id as given."""
    if is_remote(settings.probe_id):
        assert settings.probe_id is not None
        remote_probe(settings.probe_id, timeout=settings.connect_timeout_s, api=api)
        (probe,) = api.ConnectHelper.get_all_connected_probes(blocking=False, unique_id=settings.probe_id,
                                                              print_wait_message=False)
        return probe  # a fresh, unopened client: the session opens it
    probes = api.ConnectHelper.get_all_connected_probes(blocking=False, print_wait_message=False)
    where = f"board '{settings.board}' ({settings.source})"
    listing = ", ".join(str(ProbeInfo(p.unique_id, p.description)) for p in probes)
    if not probes:
        raise TargetError(
            f"{where}: no debug probe is connected (pyOCD found none). Plug the MCU-Link USB cable in "
            "(the EVK's debug port) and check `hil doctor --board rt700`."
        )
    if settings.probe_id:
        exact = [p for p in probes if str(p.unique_id).lower() == settings.probe_id.lower()]
        if not exact:
            raise TargetError(
                f"{where}: probe '{settings.probe_id}' is not connected; connected: {listing}. "
                "Set [pyocd].probe_id or pass --hil-probe with one of those ids."
            )
        return exact[0]
    if len(probes) > 1:
        raise BoardConfigError(
            f"{where}: {len(probes)} debug probes are connected and no probe id is set, so the harness "
            f"will not guess which board to flash: {listing}. Set [pyocd].probe_id or pass --hil-probe ID."
        )
    return probes[0]


def resolve_probe_id(cfg: BoardConfig) -> str:
    """The unique id of the probe this board file selects (used to lock it before anything else)."""
    api = _pyocd_api()
    return str(_choose_probe(ProbeSettings.from_config(cfg), api).unique_id)


def _translate(exc: BaseException, settings: ProbeSettings, what: str, api: SimpleNamespace) -> HilError:
    """Turn a pyOCD exception into a hil error whose message says what to do."""
    errors = api.exceptions
    where = f"board '{settings.board}' ({settings.source})"
    if isinstance(exc, errors.TargetSupportError):
        hint = PACK_HINT.format(target=settings.target)
        if settings.pack:
            hint = f"the pack {settings.pack} does not define '{settings.target}' or cannot be read; " + hint
        return BoardConfigError(f"{where}: {what}: pyOCD does not know target '{settings.target}' ({exc}); {hint}")
    if isinstance(exc, FileNotFoundError) and settings.pack:
        return BoardConfigError(f"{where}: {what}: pack file {settings.pack} cannot be read ({exc})")
    if isinstance(exc, errors.ProbeError):
        return TargetError(
            f"{where}: {what}: the probe failed ({type(exc).__name__}: {exc}); is another debugger "
            "(MCUXpresso, LinkServer, a stray pyocd gdbserver) using it?"
        )
    if isinstance(exc, errors.FlashFailure):
        return TargetError(f"{where}: {what}: flash programming failed ({type(exc).__name__}: {exc})")
    if isinstance(exc, HilError):
        return exc
    return TargetError(f"{where}: {what}: {type(exc).__name__}: {exc}")


def open_session(cfg: BoardConfig, *, api: SimpleNamespace | None = None) -> Any:
    """An opened pyOCD session on this board's probe, target overridden, pack loaded.

    The caller closes it (`session.close()`); on any failure here it is closed already.
    """
    api = api or _pyocd_api()
    settings = ProbeSettings.from_config(cfg)
    probe = _choose_probe(settings, api)
    what = f"opening probe {probe.unique_id} for target {settings.target}"
    session = None
    try:
        # Session() resolves the target (and reads the pack) in its constructor: a missing
        # target raises TargetSupportError here, before the probe is touched.
        session = api.Session(probe, auto_open=False, options=settings.session_options())
        _with_timeout(session.open, settings.connect_timeout_s, what)
        return session
    except TimeoutExpired:
        raise
    except Exception as exc:
        if session is not None:
            _close_quietly(session)
        raise _translate(exc, settings, what, api) from exc


def _close_quietly(session: Any) -> None:
    try:
        session.close()
    except Exception as exc:  # the original error matters more than a failed close
        LOG.debug("closing the pyOCD session failed: %s", exc)


def program(session: Any, elf: Path, *, timeout: float = 120.0, api: SimpleNamespace | None = None,
            progress: Callable[[float], None] | None = None) -> None:
    """Write `elf` to the target's flash (pyOCD's FileProgrammer picks the format from the suffix).

    `progress` is pyOCD's own progress callback: it is called with the fraction written, 0.0 to 1.0."""
    api = api or _pyocd_api()
    programmer = api.FileProgrammer(session, progress=progress) if progress else api.FileProgrammer(session)
    _with_timeout(lambda: programmer.program(str(elf)), timeout, f"programming {elf}")


def reset(session: Any, halt: bool = False, *, timeout: float = 20.0) -> None:
    """Reset the target; with `halt` it stops at the reset vector so nothing runs unobserved."""
    target = session.target
    _with_timeout(target.reset_and_halt if halt else target.reset, timeout, "resetting the target")


def flash_image(cfg: BoardConfig, elf: Path, *, api: SimpleNamespace | None = None,
                progress: Callable[[float], None] | None = None, force: bool = False) -> FlashReport:
    """Open, program (unless the target holds `elf` already and not `force`), reset-and-halt, close; one
    retry on a flash/transfer failure, recorded.

    A second failure raises TargetError listing both attempts: retrying more would hide an
    unstable bench, whose flaky cable or probe should fail loudly instead.
    """
    api = api or _pyocd_api()
    settings = ProbeSettings.from_config(cfg)
    elf = Path(elf)
    if not elf.is_file():
        raise BoardConfigError(f"board '{settings.board}': firmware image {elf} does not exist (build it first)")
    retryable = (api.exceptions.FlashFailure, api.exceptions.TransferError)
    report = FlashReport(probe_id=settings.probe_id or "", target=settings.target, image=str(elf))
    start = time.monotonic()
    try:
        for attempt in (1, 2):
            report.attempts = attempt
            session = open_session(cfg, api=api)
            try:
                report.probe_id = str(session.probe.unique_id)
                decision = FlashDecision("programmed", "forced (--force-flash)") if force else compare(
                    session, elf, read=lambda fn, what: _with_timeout(fn, settings.connect_timeout_s, what))
                report.done, report.why = decision.done, decision.why
                if decision.done != "skipped":
                    program(session, elf, timeout=settings.flash_timeout_s, api=api, progress=progress)
                reset(session, halt=True, timeout=settings.connect_timeout_s)
                return report
            except retryable as exc:
                report.errors.append(f"attempt {attempt}: {type(exc).__name__}: {exc}")
                LOG.warning("flashing %s failed (attempt %d): %s", elf, attempt, exc)
                if attempt == 2:
                    error = TargetError(
                        f"board '{settings.board}': flashing {elf} with probe {report.probe_id} failed twice: "
                        + "; ".join(report.errors)
                    )
                    error.flash_report = report  # type: ignore[attr-defined]  # the board records it
                    raise error from exc
            except TimeoutExpired:
                raise
            except Exception as exc:
                raise _translate(exc, settings, f"flashing {elf}", api) from exc
            finally:
                _close_quietly(session)
    finally:
        report.seconds = time.monotonic() - start
    raise AssertionError("unreachable")  # pragma: no cover


def target_support(target: str, pack: str | None = None) -> str | None:
    """Where pyOCD would find `target`: "built-in", "pack PATH", "installed pack", or None.

    The same lookup pyOCD's Board constructor does (built-in TARGET table, then the given
    pack, then packs installed with `pyocd pack install`), without needing a probe; this is
    what `pyocd list --targets` shows. Reading installed packs needs no network.
    """
    from pyocd.target import TARGET, normalise_target_type_name
    from pyocd.target.pack.pack_target import ManagedPacks, PackTargets

    name = normalise_target_type_name(target)
    if name in TARGET:
        return "built-in"
    if pack:
        found: list[str] = []
        PackTargets.process_targets_from_pack(pack, lambda dev: found.append(normalise_target_type_name(dev.part_number)))
        return f"pack {pack}" if name in found else None
    for dev in ManagedPacks.get_installed_targets():
        if normalise_target_type_name(dev.part_number) == name:
            return f"installed pack {dev.pack_description.pack_name}"
    return None
