"""The emulated RT700 as a pyOCD debug probe: SW-DP and AHB5-AP for discovery, memory straight to the emulator.

Why at this seam: pyOCD's DebugProbe is where a real MCU-Link ends (pyOCD's own probes, and third-party
ones such as pyocd-pemicro, plug in here), so everything above it -- pyOCD's CoreSight discovery, its
FileProgrammer, breakpoint manager and GDB server, and the harness -- is the code that drives a bench. The
DP and AP registers answer what discovery reads (DPIDR of an SW-DP v2, an AHB5-AP whose BASE is the ROM
table); memory goes through the MEM-AP's CSW/TAR/DRW as on a CMSIS-DAP probe, to `EmulatorMemory`.
The emulated XSPI flash takes the debugger's writes (the stand-in for the pack's flash algorithm), except a
software breakpoint: a halfword BKPT #0 written into it is refused with a transfer fault, as silicon's XIP flash
refuses it, so a debugger that does not use the FPB there fails here as it would on a bench.
(pyOCD's accelerated path, `get_memory_interface_for_ap`, is not offered: through `pyocd server` 0.46.0 its
client sends a bytearray for a block write, which its JSON encoder refuses.)
"""

from __future__ import annotations

import struct
from typing import Any

from pyocd.core import exceptions
from pyocd.core.memory_interface import MemoryInterface
from pyocd.probe.debug_probe import DebugProbe

from hil.emu import rt700_map as rt
from hil.emu.debug_port import ROM_TABLE, SystemControlSpace

DPIDR_SWDP_V2 = 0x0BE12477
AHB5_AP_IDR = 0x84770001
BKPT_0 = 0xBE00  # the halfword pyOCD's software breakpoint writes (pyocd/debug/breakpoints/software.py)
VENDOR, PRODUCT = "et-hil", "emulated RT700 (unicorn Cortex-M33)"


class EmulatorMemory(MemoryInterface):
    """The AP's view of memory: flash and SRAM buffers, the peripheral register file, the PPB's registers."""

    def __init__(self, scs: SystemControlSpace) -> None:
        self.scs = scs
        self.core = scs.core

    def _read(self, address: int, length: int) -> bytes:
        if address >= rt.PPB_BASE:
            words = [self.scs.read_word(a) for a in range(address & ~3, address + length, 4)]
            raw = struct.pack(f"<{len(words)}I", *words)
            return raw[address & 3:(address & 3) + length]
        if rt.PERIPHERALS.contains(address, length):
            return bytes(self.core.peripherals.read(address + i, 1) for i in range(length))
        try:
            return self.core.read(address, length)
        except ValueError:
            raise exceptions.TransferFaultError("read", address, length) from None

    def _write(self, address: int, data: bytes) -> None:
        if address >= rt.PPB_BASE:
            if address & 3 or len(data) & 3:
                for i, byte in enumerate(data):  # a byte or halfword store into a register: merge into its word
                    word = (address + i) & ~3
                    shift = ((address + i) & 3) * 8
                    old = self.scs.read_word(word)
                    self.scs.write_word(word, (old & ~(0xFF << shift)) | byte << shift)
                return
            for i in range(0, len(data), 4):
                self.scs.write_word(address + i, struct.unpack_from("<I", data, i)[0])
            return
        if rt.PERIPHERALS.contains(address, len(data)):
            for i, byte in enumerate(data):
                self.core.peripherals.write(address + i, 1, byte)
            return
        try:
            self.core.write(address, bytes(data))
        except ValueError:
            raise exceptions.TransferFaultError("write", address, len(data)) from None

    def write_memory(self, addr: int, data: int, transfer_size: int = 32, **attrs: Any) -> None:
        self._write(addr, int(data).to_bytes(transfer_size // 8, "little"))

    def read_memory(self, addr: int, transfer_size: int = 32, now: bool = True, **attrs: Any) -> Any:
        value = int.from_bytes(self._read(addr, transfer_size // 8), "little")
        return value if now else (lambda: value)

    def write_memory_block32(self, addr: int, data: Any, **attrs: Any) -> None:
        self._write(addr, struct.pack(f"<{len(data)}I", *data))

    def read_memory_block32(self, addr: int, size: int, **attrs: Any) -> Any:
        return list(struct.unpack(f"<{size}I", self._read(addr, 4 * size)))

    def write_memory_block8(self, addr: int, data: Any, **attrs: Any) -> None:
        self._write(addr, bytes(data))

    def read_memory_block8(self, addr: int, size: int, **attrs: Any) -> Any:
        return list(self._read(addr, size))


class LocalSwdProbe(DebugProbe):
    """What pyOCD asks of any probe that is no USB device (its name, id, state, SWD only), for a subclass that
    sets `vendor`/`product` and `_uid`; the probes of a process are handed to pyOCD by that process, not listed."""

    vendor, product = VENDOR, PRODUCT

    def __init__(self, uid: str) -> None:
        super().__init__()
        self._uid, self._open, self._protocol = uid, False, None

    @classmethod
    def get_all_connected_probes(cls, unique_id: str | None = None, is_explicit: bool = False) -> list:
        return []

    @classmethod
    def get_probe_with_id(cls, unique_id: str, is_explicit: bool = False) -> None:
        return None

    vendor_name = property(lambda self: self.vendor)
    product_name = property(lambda self: self.product)
    unique_id = property(lambda self: self._uid)
    is_open = property(lambda self: self._open)
    wire_protocol = property(lambda self: self._protocol)
    supported_wire_protocols = property(lambda self: [DebugProbe.Protocol.DEFAULT, DebugProbe.Protocol.SWD])
    capabilities = property(lambda self: set())


class EmulatedProbe(LocalSwdProbe):
    """One emulated board per probe; its unique id names it to `pyocd server --uid` (hil.emu.server)."""

    def __init__(self, uid: str, scs: SystemControlSpace) -> None:
        super().__init__(uid)
        self.scs = scs
        self._ctrl_stat = self._select = 0
        self._csw = 0x23000052
        self._tar = 0
        self.refused_breakpoints = 0  # software breakpoints (BKPT #0) a debugger tried to write into the flash
        self.memory = EmulatorMemory(scs)

    def open(self) -> None:
        self._open = True

    def close(self) -> None:
        self._open = False

    def connect(self, protocol: Any = None) -> None:
        self._protocol = DebugProbe.Protocol.SWD

    def disconnect(self) -> None:
        self._protocol = None

    def swj_sequence(self, length: int, bits: int) -> None:
        pass

    def set_clock(self, frequency: float) -> None:
        pass

    def reset(self) -> None:
        """nRESET pulsed: the same system reset as AIRCR.SYSRESETREQ."""
        self.scs.system_reset()

    def assert_reset(self, asserted: bool) -> None:
        if not asserted:
            self.scs.system_reset()

    def is_reset_asserted(self) -> bool:
        return False

    def flush(self) -> None:
        pass

    def read_dp(self, addr: int, now: bool = True) -> Any:
        if addr == 0x0:
            value = DPIDR_SWDP_V2 if (self._select & 0xF) == 0 else 0
        elif addr == 0x4:
            value = self._ctrl_stat | ((self._ctrl_stat & 0x50000000) << 1) if (self._select & 0xF) == 0 else 0
        else:
            value = 0
        return value if now else (lambda: value)

    def write_dp(self, addr: int, data: int) -> None:
        if addr == 0x4:
            self._ctrl_stat = data & 0x50000F00
        elif addr == 0x8:
            self._select = data

    def read_ap(self, addr: int, now: bool = True) -> Any:
        reg = addr & 0xFC
        value = 0
        if addr >> 24 == 0:
            if reg == 0x0C:
                value = self._drw_read()
            else:
                value = {0x00: self._csw | 0x40, 0x04: self._tar, 0xF8: ROM_TABLE | 3, 0xFC: AHB5_AP_IDR}.get(reg, 0)
        return value if now else (lambda: value)

    def write_ap(self, addr: int, data: int) -> None:
        reg = addr & 0xFC
        if addr >> 24 != 0:
            return
        if reg == 0x00:
            self._csw = data
        elif reg == 0x04:
            self._tar = data
        elif reg == 0x0C:
            self._drw_write(data)

    # The MEM-AP's data path: CSW.Size (bits 2:0) and AddrInc (bits 5:4), TAR, DRW with byte lanes.
    def _step(self) -> tuple[int, int]:
        size, address = 1 << (self._csw & 7), self._tar
        if (self._csw >> 4) & 3:
            self._tar = (self._tar + size) & 0xFFFFFFFF
        return size, address

    def _drw_read(self) -> int:
        size, address = self._step()
        raw = self.memory._read(address, size)
        return int.from_bytes(raw, "little") << (8 * (address & 3))

    def _drw_write(self, data: int) -> None:
        size, address = self._step()
        value = (data >> (8 * (address & 3))) & ((1 << (8 * size)) - 1)
        if size == 2 and value == BKPT_0 and rt.FLASH.contains(address, 2):
            self.refused_breakpoints += 1
            raise exceptions.TransferFaultError("write", address, 2)  # as the XIP flash refuses it on silicon
        self.memory._write(address, value.to_bytes(size, "little"))

    def read_ap_multiple(self, addr: int, count: int = 1, now: bool = True) -> Any:
        values = [self.read_ap(addr) for _ in range(count)]
        return values if now else (lambda: values)

    def write_ap_multiple(self, addr: int, values: Any) -> None:
        for value in values:
            self.write_ap(addr, value)

