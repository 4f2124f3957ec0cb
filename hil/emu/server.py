"""`python -m hil.emu.server`: one emulated RT700 behind pyOCD's own `pyocd server`, its console on a socket.

Why a process of its own: a bench's flash (pyOCD's Python API in the harness) and its debugger (`pyocd gdbserver`,
another process) reach one board through one probe; here they reach one emulator through `pyocd server`'s
remote-probe protocol (`--probe remote:127.0.0.1:PORT`), exactly as a bench shared over the network is reached.
The flash starts blank (erased, 0xFF) and the core halted: nothing runs until pyOCD programs and resets it.
The probe is registered in pyOCD's probe table (pyocd.probe.aggregator.PROBE_CLASSES, the table pyOCD's
`pyocd.probe` plugins fill), so `pyocd server --uid` finds it as it finds an MCU-Link.

Arguments: --port (pyOCD server), --console-port, --uid, --symbols ELF (where the skipped bring-up functions are).
On exit it prints one JSON line to stdout: instructions executed, the skipped functions and how often each ran.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
from pathlib import Path

from hil.emu import rt700_map as rt
from hil.emu.core import M33Core
from hil.emu.debug_port import SystemControlSpace
from hil.emu.peripherals import PeripheralFile, SocketConsole
from hil.emu.probe import EmulatedProbe


def skip_addresses(elf: Path) -> dict[int, str]:
    """Address -> name of each BRING_UP_SKIPPED function the image defines (from its .symtab)."""
    from hil.records.elf_reader import read_elf

    image = read_elf(elf)
    found: dict[int, str] = {}
    for name, _why in rt.BRING_UP_SKIPPED:
        for symbol in image.symbols_named(name):
            if symbol.kind == "FUNC":
                found[symbol.address] = name
    return found


def build_board(console_port: int, symbols: Path | None, *,
                counting: str = "native") -> tuple[SystemControlSpace, SocketConsole]:
    console = SocketConsole(console_port)
    core = M33Core(PeripheralFile(console), counting=counting)
    scs = SystemControlSpace(core)
    if symbols is not None:
        core.skip_functions(skip_addresses(symbols))
    return scs, console


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m hil.emu.server", description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--console-port", type=int, required=True)
    parser.add_argument("--uid", required=True)
    parser.add_argument("--symbols", type=Path, default=None)
    args = parser.parse_args(argv)
    scs, console = build_board(args.console_port, args.symbols)
    probe = EmulatedProbe(args.uid, scs)

    import pyocd.probe.aggregator as aggregator

    class ThisBoard(EmulatedProbe):
        @classmethod
        def get_all_connected_probes(cls, unique_id: str | None = None, is_explicit: bool = False) -> list:
            return [probe]

    aggregator.PROBE_CLASSES["rt700emu"] = ThisBoard
    from pyocd.__main__ import PyOCDTool

    # The board ends the server with SIGTERM: unwind, so the closing line below is still written.
    signal.signal(signal.SIGTERM, lambda _signum, _frame: sys.exit(0))
    try:
        return PyOCDTool().run(["server", "--port", str(args.port), "--uid", args.uid, "--local-only",
                                "--no-wait"]) or 0
    finally:
        scs.core.halt()
        console.close()
        print(json.dumps({"instructions": scs.core.executed, "skipped": scs.core.skipped,
                          "breakpoint_hits": scs.core.breakpoint_hits, "resets": scs.resets,
                          "refused_flash_breakpoints": probe.refused_breakpoints}), flush=True)


if __name__ == "__main__":
    sys.exit(main())
