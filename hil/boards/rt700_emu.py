"""The emulated RT700 (`--board rt700-emu`): the RT700 board's own code, its probe an emulator behind `pyocd server`.

Why a subclass of the RT700 board and not a board of its own: the point of this board is to run the bench's
road -- pyOCD programming the flash with the skip-re-flash read-back, `pyocd gdbserver`, hardware breakpoints,
the ETDump read out of SRAM, fault forensics -- so only the probe differs. Before the first flash it starts
`python -m hil.emu.server` (hil/emu: the bench image on unicorn's Cortex-M33 with the RT700 map) on two free
loopback ports and points the board file's probe, target and console at it: `remote:127.0.0.1:PORT`, pyOCD's
generic `cortex_m` target (no device pack: the emulator's flash takes plain writes), `socket://127.0.0.1:PORT`.
The server lives as long as the board object and is ended by `close()`.
"""

from __future__ import annotations

import importlib.util
import sys
import time
from pathlib import Path
from typing import Any

from hil.boards.rt700 import Rt700Board
from hil.base.errors import EnvironmentFault, TargetError
from hil.probe.pyocd_flash import ProbeSettings
from hil.target.ports import LOOPBACK, free_tcp_port, wait_for_listen
from hil.target.process import ManagedProcess

SERVER_START_S = 60.0
EMULATED_TARGET = "cortex_m"


def skipped_functions() -> list[dict[str, str]]:
    """The bring-up functions the emulation returns from at once, and why (for the manifest and profile)."""
    from hil.emu.rt700_map import BRING_UP_SKIPPED

    return [{"function": name, "why": why} for name, why in BRING_UP_SKIPPED]


def time_base(clock_mhz: float) -> dict[str, Any]:
    """What the emulated board's numbers are: instructions executed (DWT CYCCNT), shown at the board file's clock."""
    from hil.emu.rt700_map import NOT_EMULATED

    return {"kind": "emulated RT700 instructions", "instructions_per_us": clock_mhz, "npu": "none",
            "skipped": [entry["function"] for entry in skipped_functions()],
            "note": (f"instructions executed by the RT700 image on unicorn's Cortex-M33 (DWT CYCCNT counts "
                     f"instructions), shown as {clock_mhz:g} instructions per us; not emulated: "
                     + "; ".join(NOT_EMULATED))}


class Rt700EmuBoard(Rt700Board):
    """See the module docstring."""

    name = "rt700-emu"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._server: ManagedProcess | None = None

    def _take_probe(self) -> None:
        if self._server is None:
            self._start_emulator()
        super()._take_probe()

    def _start_emulator(self) -> None:
        if importlib.util.find_spec("unicorn") is None:
            raise EnvironmentFault(f"board '{self.cfg.name}' needs the unicorn package (the emulated Cortex-M33), "
                                   "which is not installed: pip install 'et-hil[emu]' (unicorn~=2.1.4)")
        port, console = free_tcp_port(), free_tcp_port()
        uid = f"rt700-emu-{port}"
        argv = [sys.executable, "-m", "hil.emu.server", "--port", str(port), "--console-port", str(console),
                "--uid", uid]
        image = self.cfg.get("firmware.elf", "")
        if image and Path(str(image)).is_file():
            argv += ["--symbols", str(image)]
        with self.timer.step("start_emulator", "start the emulated RT700 behind pyocd server"):
            server = ManagedProcess(argv, "rt700-emu server", self.workdir / "emulator.log").start()
            self._server = server
            deadline = time.monotonic() + SERVER_START_S
            wait_for_listen(port, deadline, what="rt700-emu server", alive=lambda: server.alive)
            wait_for_listen(console, deadline, what="rt700-emu console", alive=lambda: server.alive)
        self.cfg = self.cfg.with_overrides({"pyocd.probe_id": f"remote:{LOOPBACK}:{port}",
                                            "serial.url": f"socket://{LOOPBACK}:{console}",
                                            "pyocd.target": EMULATED_TARGET, "pyocd.pack": ""})
        self.settings = ProbeSettings.from_config(self.cfg)

    def flash(self, image: Path, *args: Any, **kwargs: Any) -> None:
        if self._server is None:
            self.cfg = self.cfg.with_overrides({"firmware.elf": str(image)})
        super().flash(image, *args, **kwargs)

    def close(self) -> None:
        try:
            super().close()
        finally:
            server, self._server = self._server, None
            if server is not None:
                try:
                    server.close()
                except OSError as exc:
                    raise TargetError(f"board '{self.cfg.name}': the emulator did not stop: {exc}") from None
