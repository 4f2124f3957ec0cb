"""The RT700's peripherals as the emulated core sees them: a register file, and LPUART0 feeding a socket console.

Why a plain register file: the bench image's start-up (PMIC over LPI2C15, power domains, pin muxing) writes
registers and reads back what it wrote; a read that returns the last write lets it run through. What spins on
real status bits is skipped by function instead (hil.emu.rt700_map.BRING_UP_SKIPPED). LPUART0 is the one
peripheral with behaviour: `LPUART_WriteBlocking` (the SDK's fsl_lpuart.c) polls STAT.TDRE (bit 23) before each
byte and STAT.TC (bit 22) at the end, then writes the byte to DATA (offset 0x1C); both bits always read as set,
and every byte written goes to the console, a TCP socket the harness opens as `socket://127.0.0.1:PORT` (the
bench's VCOM). Bytes written before anyone connects are kept and sent on connect, so no line is lost.
"""

from __future__ import annotations

import socket
import threading

from hil.emu.rt700_map import LPUART0

LPUART_STAT, LPUART_DATA = 0x14, 0x1C
STAT_TDRE, STAT_TC = 1 << 23, 1 << 22


class SocketConsole:
    """The console's listening socket on the loopback: one client at a time, bytes kept until one is there."""

    def __init__(self, port: int = 0) -> None:
        self._server = socket.create_server(("127.0.0.1", port))
        self.port = self._server.getsockname()[1]
        self._client: socket.socket | None = None
        self._pending = bytearray()
        self._lock = threading.Lock()
        threading.Thread(target=self._accept, name="emu-console", daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._server.accept()
            except OSError:
                return
            with self._lock:
                if self._client is not None:
                    self._client.close()
                self._client = client
                self._flush()

    def _flush(self) -> None:
        if self._client is None or not self._pending:
            return
        try:
            self._client.sendall(bytes(self._pending))
            self._pending.clear()
        except OSError:  # the reader went away: keep the bytes for the next one
            self._client.close()
            self._client = None

    def write(self, data: bytes) -> None:
        with self._lock:
            self._pending += data
            self._flush()

    def close(self) -> None:
        with self._lock:
            if self._client is not None:
                self._client.close()
        self._server.close()


class PeripheralFile:
    """Word registers of 0x40000000-0x5FFFFFFF (a read returns the last write), LPUART0 modelled on top."""

    def __init__(self, console: SocketConsole | None) -> None:
        self.console = console
        self.words: dict[int, int] = {}
        self.console_bytes = 0

    def reset(self) -> None:
        self.words.clear()

    def read(self, address: int, size: int) -> int:
        word = address & ~3
        value = self.words.get(word, 0)
        if word - LPUART_STAT in LPUART0:
            value |= STAT_TDRE | STAT_TC
        shift = (address & 3) * 8
        return (value >> shift) & ((1 << (8 * size)) - 1)

    def write(self, address: int, size: int, value: int) -> None:
        word = address & ~3
        if word - LPUART_DATA in LPUART0:
            self.console_bytes += 1
            if self.console is not None:
                self.console.write(bytes([value & 0xFF]))
            return
        shift = (address & 3) * 8
        mask = ((1 << (8 * size)) - 1) << shift
        self.words[word] = (self.words.get(word, 0) & ~mask) | ((value << shift) & mask)
