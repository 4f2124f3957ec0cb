"""A small stand-in for pyOCD at its API boundary: the only fake the test suite allows.

No board is attached to CI, so the probe list, a session's open and a flash write are played
by these classes. They keep pyOCD's names and signatures (`ConnectHelper.get_all_connected_probes`,
`Session(probe, auto_open, options)`, `FileProgrammer(session).program(path)`) and raise pyOCD's
*real* exception classes, so the harness's error handling is tested against what pyOCD raises.
Install with `FakeBench(...).install(monkeypatch)`, which replaces `hil.probe.pyocd_flash._pyocd_api`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

from pyocd.core import exceptions


@dataclass
class FakeProbe:
    """What pyOCD's DebugProbe exposes to the harness: an id and a description."""

    unique_id: str
    description: str = "NXP MCU-LINK CMSIS-DAP"


@dataclass
class FakeBench:
    """The probes on the desk and how they misbehave.

    `known_targets`: target names a session accepts (others raise TargetSupportError in the
    Session constructor, as pyOCD's Board does). `open_error`: raised by `session.open()`.
    `list_delay_s` / `open_delay_s`: a USB enumeration or probe open that hangs that long.
    `flash_failures`: how many `program()` calls fail with FlashFailure before one succeeds.
    `memory`: address -> byte the target holds, written by `program()` from the ELF's loadable segments (as
    pyOCD's FileProgrammer does; unwritten flash reads as erased 0xFF). `readable=False`: every memory read
    faults (TransferFaultError), as a locked or unmapped flash does. `calls` records what the harness asked, in order.
    """

    probes: list[FakeProbe] = field(default_factory=list)
    known_targets: tuple[str, ...] = ("mimxrt798sgfob",)
    open_error: BaseException | None = None
    flash_failures: int = 0
    list_delay_s: float = 0.0
    open_delay_s: float = 0.0
    calls: list[tuple] = field(default_factory=list)
    sessions: list["FakeSession"] = field(default_factory=list)
    memory: dict[int, int] = field(default_factory=dict)
    readable: bool = True

    def api(self) -> SimpleNamespace:
        bench = self

        class ConnectHelper:
            @staticmethod
            def get_all_connected_probes(blocking: bool = True, unique_id: str | None = None,
                                         print_wait_message: bool = True) -> list[FakeProbe]:
                assert blocking is False, "the harness must never block waiting for a probe"
                bench.calls.append(("list_probes",))
                time.sleep(bench.list_delay_s)
                found = [p for p in bench.probes if unique_id is None or unique_id.lower() in p.unique_id.lower()]
                return sorted(found, key=lambda p: p.description + p.unique_id)

        def make_session(probe: FakeProbe, auto_open: bool = True, options: dict | None = None, **kw: Any):
            return FakeSession(bench, probe, dict(options or {}, **kw))

        class FileProgrammer:
            def __init__(self, session: "FakeSession", progress: Any = None, **_kw: Any) -> None:
                self.session = session
                self.progress = progress

            def program(self, path: str, file_format: str | None = None, **_kw: Any) -> None:
                bench.calls.append(("program", self.session.probe.unique_id, path))
                for fraction in (0.0, 0.5, 1.0) if self.progress else ():  # as pyOCD's FlashLoader reports
                    self.progress(fraction)
                if bench.flash_failures > 0:
                    bench.flash_failures -= 1
                    raise exceptions.FlashProgramFailure("flash algo program page failed", address=0x28004000,
                                                         result_code=1)
                bench.write_elf(path)

        return SimpleNamespace(version="0.46.0-fake", ConnectHelper=ConnectHelper, Session=make_session,
                               FileProgrammer=FileProgrammer, exceptions=exceptions)

    def write_elf(self, path: str) -> None:
        """What the flash then holds: each PT_LOAD segment's file bytes at its physical address."""
        from elftools.common.exceptions import ELFError
        from elftools.elf.elffile import ELFFile

        try:
            with open(path, "rb") as stream:
                for seg in ELFFile(stream).iter_segments():
                    if seg["p_type"] == "PT_LOAD":
                        self.memory.update(enumerate(seg.data(), seg["p_paddr"]))
        except ELFError:  # the tests' placeholder images are no ELF: nothing readable is written
            pass

    def install(self, monkeypatch: Any) -> "FakeBench":
        import hil.probe.pyocd_flash as pyocd_flash

        monkeypatch.setattr(pyocd_flash, "_pyocd_api", self.api)
        return self


class FakeTarget:
    def __init__(self, session: "FakeSession") -> None:
        self.session = session

    def reset(self) -> None:
        self.session.bench.calls.append(("reset", False))

    def reset_and_halt(self) -> None:
        self.session.bench.calls.append(("reset", True))

    def read_memory_block8(self, addr: int, size: int) -> list[int]:
        bench = self.session.bench
        bench.calls.append(("read", addr, size))
        if not bench.readable:
            raise exceptions.TransferFaultError("read", fault_address=addr, length=size)
        return [bench.memory.get(a, 0xFF) for a in range(addr, addr + size)]


class FakeSession:
    """A pyOCD Session: resolves the target when built, talks to the probe when opened."""

    def __init__(self, bench: FakeBench, probe: FakeProbe, options: dict[str, Any]) -> None:
        self.bench, self.probe, self.options = bench, probe, options
        self.is_open = False
        self.closed = False
        bench.sessions.append(self)
        target = options.get("target_override")
        if target not in bench.known_targets:
            # The message pyOCD 0.46.0's Board constructor raises for an unknown target type.
            raise exceptions.TargetSupportError(
                f"Target type {target} not recognized. Use 'pyocd list --targets' to see currently "
                "available target types.")
        self.target = FakeTarget(self)

    def open(self) -> None:
        self.bench.calls.append(("open", self.probe.unique_id))
        time.sleep(self.bench.open_delay_s)
        if self.bench.open_error is not None:
            raise self.bench.open_error
        self.is_open = True

    def close(self) -> None:
        self.bench.calls.append(("close", self.probe.unique_id))
        self.is_open = False
        self.closed = True
