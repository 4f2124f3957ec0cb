"""`pyocd server` (pyOCD's own code, unchanged) serving a fake probe: the remote-probe tests' only fake.

Run as `python fake_probe_server.py PORT UID LOG`: pyOCD's probe discovery is replaced by one
`FakeDebugProbe`, then pyOCD's real `server` subcommand runs, so everything between the harness and
the probe (pyOCD's TCPClientProbe, the JSON protocol, the server's request handlers, pyOCD's CoreSight
discovery, flash loader and GDB server on the client side) is pyOCD's own.

Behind the probe sits the least of a Cortex-M4 that pyOCD's discovery accepts (`FakeTarget`): an ADIv5
SW-DP, one AHB-AP over a sparse byte memory, a ROM table naming the SCS, and the SCS registers a debugger
uses (CPUID, DHCSR halt/run, DCRSR/DCRDR core registers, DEMCR reset catch, AIRCR reset). It runs no code.
Each probe call is appended to LOG (so a test sees who reached the probe), and at every `close` the
memory written so far is saved to LOG + ".mem" as JSON {address: hex bytes} of contiguous runs.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from pyocd.probe.debug_probe import DebugProbe

from hil.emu.probe import LocalSwdProbe

VENDOR, PRODUCT = "NXP", "MCU-LINK CMSIS-DAP (fake)"

DPIDR = 0x2BA01477  # ADIv5 SW-DP v1 (Cortex-M3/M4)
AHB_AP_IDR = 0x24770011
ROM_TABLE = 0xE00FF000
SCS = 0xE000E000
CPUID_M4 = 0x410FC241
DHCSR, DCRSR, DCRDR, DEMCR, AIRCR, CPUID = 0xE000EDF0, 0xE000EDF4, 0xE000EDF8, 0xE000EDFC, 0xE000ED0C, 0xE000ED00
S_RESET_ST, S_HALT, S_REGRDY = 1 << 25, 1 << 17, 1 << 16


def _component_ids(base: int, cid_class: int, part: int) -> dict[int, int]:
    """CoreSight PIDR0-4 and CIDR0-3 words of an ARM component (JEP106 ARM: 0x3B, bank 4)."""
    pidr = [part & 0xFF, ((part >> 8) & 0xF) | 0xB0, 0x0B, 0x00, 0x04]
    cidr = [0x0D, (cid_class << 4) & 0xF0, 0x05, 0xB1]
    words = {base + 0xFD0: pidr[4], base + 0xFE0: pidr[0], base + 0xFE4: pidr[1], base + 0xFE8: pidr[2],
             base + 0xFEC: pidr[3]}
    words.update({base + 0xFF0 + 4 * i: value for i, value in enumerate(cidr)})
    return words


class FakeTarget:
    """The DP, the AHB-AP and the memory behind them (see the module docstring)."""

    def __init__(self) -> None:
        self.ctrl_stat = 0
        self.select = 0
        self.csw = 0x03000052
        self.tar = 0
        self.memory: dict[int, int] = {}  # byte address -> byte
        self.words = {ROM_TABLE: (SCS - ROM_TABLE) & 0xFFFFF000 | 3, ROM_TABLE + 4: 0, CPUID: CPUID_M4}
        self.words.update(_component_ids(ROM_TABLE, 0x1, 0x4C4))  # class 1: a ROM table
        self.words.update(_component_ids(SCS, 0xE, 0x00C))  # the SCS of an ARMv7-M core
        self.halted = False
        self.reset_seen = False
        self.dcrdr = 0
        self.regs: dict[int, int] = {}

    # -- DP and AP registers ---------------------------------------------------------------

    def read_dp(self, addr: int) -> int:
        if addr == 0x0:
            return DPIDR
        if addr == 0x4:  # every power-up request is acknowledged at once
            return self.ctrl_stat | ((self.ctrl_stat & 0x50000000) << 1)
        return 0

    def write_dp(self, addr: int, data: int) -> None:
        if addr == 0x4:
            self.ctrl_stat = data & 0x50000F00
        elif addr == 0x8:
            self.select = data

    def read_ap(self, addr: int) -> int:
        apsel, reg = addr >> 24, addr & 0xFC
        if apsel != 0:
            return 0
        if reg == 0x00:
            return self.csw | 0x40  # DeviceEn
        if reg == 0x04:
            return self.tar
        if reg == 0x0C:
            return self._drw_read()
        if reg == 0xF8:
            return ROM_TABLE | 3
        return {0xFC: AHB_AP_IDR, 0xF4: 0}.get(reg, 0)

    def write_ap(self, addr: int, data: int) -> None:
        apsel, reg = addr >> 24, addr & 0xFC
        if apsel != 0:
            return
        if reg == 0x00:
            self.csw = data
        elif reg == 0x04:
            self.tar = data
        elif reg == 0x0C:
            self._drw_write(data)

    def _size(self) -> int:
        return 1 << (self.csw & 0x7)

    def _advance(self) -> None:
        if (self.csw >> 4) & 0x3:
            self.tar = (self.tar + self._size()) & 0xFFFFFFFF

    def _drw_read(self) -> int:
        value = self.read_word(self.tar & ~3)
        self._advance()
        return value

    def _drw_write(self, data: int) -> None:
        size, addr = self._size(), self.tar
        lane = (addr & 3) * 8
        if size == 4:
            self.write_word(addr & ~3, data)
        else:
            for i in range(size):
                self.memory[addr + i] = (data >> (lane + 8 * i)) & 0xFF
        self._advance()

    # -- memory and the SCS ----------------------------------------------------------------

    def read_word(self, addr: int) -> int:
        if addr == DHCSR:
            value = S_REGRDY | 0x1 | ((S_HALT | 0x2) if self.halted else 0) | (S_RESET_ST if self.reset_seen else 0)
            self.reset_seen = False  # sticky until read
            return value
        if addr == DCRDR:
            return self.dcrdr
        if addr in self.words:
            return self.words[addr]
        return int.from_bytes(bytes(self.memory.get(addr + i, 0) for i in range(4)), "little")

    def write_word(self, addr: int, data: int) -> None:
        if addr == DHCSR and data >> 16 == 0xA05F:
            self.halted = bool(data & 0x2) or bool(data & 0x4)  # C_HALT, or a single step that stops again
        elif addr == DCRDR:
            self.dcrdr = data
        elif addr == DCRSR:
            if data & (1 << 16):
                self.regs[data & 0x7F] = self.dcrdr
            else:
                self.dcrdr = self.regs.get(data & 0x7F, 0)
        elif addr == AIRCR and data >> 16 == 0x05FA and data & 0x5:  # SYSRESETREQ or VECTRESET
            self.reset_seen = True
            self.halted = bool(self.words.get(DEMCR, 0) & 0x1)  # VC_CORERESET: halt at the reset vector
            self.regs.update({13: self.read_word(0), 15: self.read_word(4) & ~1, 16: 1 << 24})  # SP, PC, xPSR.T
        elif addr >= 0xE0000000:
            self.words[addr] = data
        else:
            for i in range(4):
                self.memory[addr + i] = (data >> (8 * i)) & 0xFF

    def written_runs(self) -> dict[str, str]:
        """Contiguous runs of written memory below the system region: {"0x20000000": "hex bytes"}."""
        runs: dict[str, str] = {}
        start, chunk = None, bytearray()
        for addr in sorted(self.memory):
            if start is not None and addr != start + len(chunk):
                runs[hex(start)] = chunk.hex()
                start, chunk = None, bytearray()
            if start is None:
                start = addr
            chunk.append(self.memory[addr])
        if start is not None:
            runs[hex(start)] = chunk.hex()
        return runs


class FakeDebugProbe(LocalSwdProbe):
    vendor, product = VENDOR, PRODUCT

    def __init__(self, uid: str, log: Path) -> None:
        super().__init__(uid)
        self._log = log
        self.target = FakeTarget()

    def _note(self, *what: object) -> None:
        with open(self._log, "a", encoding="utf-8") as log:
            log.write(" ".join(map(str, what)) + "\n")

    def open(self) -> None:
        self._note("open")
        self._open = True

    def close(self) -> None:
        self._note("close")
        self._open = False
        Path(f"{self._log}.mem").write_text(json.dumps(self.target.written_runs()))

    def connect(self, protocol=None) -> None:
        self._note("connect", protocol)
        self._protocol = DebugProbe.Protocol.SWD

    def disconnect(self) -> None:
        self._note("disconnect")
        self._protocol = None

    def swj_sequence(self, length, bits) -> None:
        self._note("swj_sequence", length)

    def set_clock(self, frequency) -> None:
        self._note("set_clock", frequency)

    def reset(self) -> None:
        self._note("reset")

    def assert_reset(self, asserted) -> None:
        self._note("assert_reset", asserted)

    def is_reset_asserted(self) -> bool:
        return False

    def flush(self) -> None:
        pass

    def read_dp(self, addr, now=True):
        self._note("read_dp", hex(addr))
        return self.target.read_dp(addr)

    def write_dp(self, addr, data) -> None:
        self._note("write_dp", hex(addr), hex(data))
        self.target.write_dp(addr, data)

    def read_ap(self, addr, now=True):
        return self.target.read_ap(addr)

    def write_ap(self, addr, data) -> None:
        self.target.write_ap(addr, data)

    def read_ap_multiple(self, addr, count=1, now=True):
        return [self.target.read_ap(addr) for _ in range(count)]

    def write_ap_multiple(self, addr, values) -> None:
        for value in values:
            self.target.write_ap(addr, value)


def start_server(folder: Path, uid: str = "0BFJXK2W3NM3J") -> tuple[Any, str, Path]:
    """Run this file as a `pyocd server` child on a free loopback port: (ManagedProcess, remote: id, call log)."""
    import time

    from hil.probe.gdbserver import _listening_ports
    from hil.target.ports import LOOPBACK, free_tcp_port
    from hil.target.process import ManagedProcess

    port, log = free_tcp_port(), Path(folder) / "probe-calls.log"
    log.touch()
    process = ManagedProcess([sys.executable, __file__, str(port), uid, str(log)], "pyocd server",
                             Path(folder) / "server.log").start()
    deadline = time.monotonic() + 60
    while port not in (_listening_ports() or set()):
        if not process.alive or time.monotonic() > deadline:
            process.close()
            raise RuntimeError(f"pyocd server never listened: {(Path(folder) / 'server.log').read_text()}")
        time.sleep(0.05)
    return process, f"remote:{LOOPBACK}:{port}", log


def build_ram_image(folder: Path) -> tuple[Path, int, bytes]:
    """A small ELF whose one load segment lands in RAM (pyOCD's max32630 map: 0x20000000); (ELF, address, bytes)."""
    import subprocess

    from elftools.elf.elffile import ELFFile

    source, elf = Path(folder) / "image.c", Path(folder) / "image.elf"
    source.write_text("const unsigned char payload[64] = {" + ", ".join(str(i * 7 % 256) for i in range(64)) + "};\n"
                      "void _start(void) { for (;;) {} }\n")
    subprocess.run(["arm-none-eabi-gcc", "-mcpu=cortex-m4", "-mthumb", "-nostdlib", "-O1", "-Wl,-Ttext=0x20000000",
                    "-Wl,--no-warn-rwx-segments", "-o", str(elf), str(source)], check=True, timeout=60)
    with open(elf, "rb") as handle:
        (segment,) = [seg for seg in ELFFile(handle).iter_segments()
                      if seg.header.p_type == "PT_LOAD" and seg.header.p_filesz]
        return elf, segment["p_paddr"], segment.data()


def written_memory(log: Path) -> dict[int, bytes]:
    """What the fake target's memory received, as saved at the probe's last close."""
    return {int(addr, 16): bytes.fromhex(data) for addr, data in json.loads(Path(f"{log}.mem").read_text()).items()}


def main() -> int:
    port, uid, log = sys.argv[1], sys.argv[2], Path(sys.argv[3])
    probe = FakeDebugProbe(uid, log)
    import pyocd.probe.aggregator as aggregator

    aggregator.DebugProbeAggregator.get_all_connected_probes = staticmethod(lambda unique_id=None: [probe])
    from pyocd.__main__ import PyOCDTool

    # --local-only: the server binds localhost alone (pyOCD's own option).
    return PyOCDTool().run(["server", "--port", port, "--uid", uid, "--local-only", "--no-wait"]) or 0


if __name__ == "__main__":
    sys.exit(main())
