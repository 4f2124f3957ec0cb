"""`pyocd server` (pyOCD's own code, unchanged) serving a fake probe: the remote-probe tests' only fake.

Run as `python fake_probe_server.py PORT UID LOG`: pyOCD's probe discovery is replaced by one
`FakeDebugProbe`, then pyOCD's real `server` subcommand runs, so everything between the harness and
the probe (pyOCD's TCPClientProbe, the JSON protocol, the server's request handlers) is pyOCD's own.
The probe answers like a probe with nothing behind it (every DP/AP register reads 0) and appends
each call it gets to LOG, so a test can see who reached it.
"""

from __future__ import annotations

import sys
from pathlib import Path

from pyocd.probe.debug_probe import DebugProbe

VENDOR, PRODUCT = "NXP", "MCU-LINK CMSIS-DAP (fake)"


class FakeDebugProbe(DebugProbe):
    def __init__(self, uid: str, log: Path) -> None:
        super().__init__()
        self._uid, self._log, self._open, self._protocol = uid, log, False, None

    def _note(self, *what: object) -> None:
        with open(self._log, "a", encoding="utf-8") as log:
            log.write(" ".join(map(str, what)) + "\n")

    @classmethod
    def get_all_connected_probes(cls, unique_id=None, is_explicit=False):  # pragma: no cover - not used
        return []

    @classmethod
    def get_probe_with_id(cls, unique_id, is_explicit=False):  # pragma: no cover - not used
        return None

    vendor_name = property(lambda self: VENDOR)
    product_name = property(lambda self: PRODUCT)
    unique_id = property(lambda self: self._uid)
    is_open = property(lambda self: self._open)
    wire_protocol = property(lambda self: self._protocol)
    supported_wire_protocols = property(lambda self: [DebugProbe.Protocol.DEFAULT, DebugProbe.Protocol.SWD])
    capabilities = property(lambda self: set())

    def open(self) -> None:
        self._note("open")
        self._open = True

    def close(self) -> None:
        self._note("close")
        self._open = False

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
        return 0

    def write_dp(self, addr, data) -> None:
        self._note("write_dp", hex(addr), hex(data))

    def read_ap(self, addr, now=True):
        self._note("read_ap", hex(addr))
        return 0

    def write_ap(self, addr, data) -> None:
        self._note("write_ap", hex(addr), hex(data))

    def read_ap_multiple(self, addr, count=1, now=True):
        return [0] * count

    def write_ap_multiple(self, addr, values) -> None:
        pass


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
