"""`--hil-probe remote:HOST:PORT`: a probe served by pyOCD's own `pyocd server`, reached by pyOCD's own client.

Everything is real except the probe behind the server (tests/unit/fake_probe_server.py): resolution, the
doctor's listing, the flash session and `pyocd gdbserver` all talk pyOCD's remote-probe protocol to it.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

from hil.config import load_board_config
from hil.doctor import check_probes
from hil.errors import BoardConfigError, TargetError
from hil.probe.gdbserver import PyocdGdbServer
from hil.probe.pyocd_flash import flash_image, resolve_probe_id
from hil.boards.rt700 import serial_url_for
from hil.road.ports import LOOPBACK, free_tcp_port
from hil.road.process import ManagedProcess, live_children

FAKE_SERVER = Path(__file__).with_name("fake_probe_server.py")
UID = "0BFJXK2W3NM3J"


@pytest.fixture
def server(tmp_path):
    """`pyocd server` on a free loopback port with the fake probe behind it; (probe id, the probe's call log)."""
    from hil.probe.gdbserver import _listening_ports

    port, log = free_tcp_port(), tmp_path / "probe-calls.log"
    log.touch()
    process = ManagedProcess([sys.executable, str(FAKE_SERVER), str(port), UID, str(log)], "pyocd server",
                             tmp_path / "server.log").start()
    try:
        deadline = time.monotonic() + 60
        while port not in (_listening_ports() or set()):
            assert process.alive, (tmp_path / "server.log").read_text()
            assert time.monotonic() < deadline, "pyocd server never listened"
            time.sleep(0.05)
        yield f"remote:{LOOPBACK}:{port}", log
    finally:
        process.close()
    assert live_children() == []


def board(probe_id: str, **extra):
    return load_board_config("rt700").with_overrides({"pyocd.probe_id": probe_id, "pyocd.target": "cortex_m",
                                                      "pyocd.connect_timeout_s": 15, **extra})


def test_a_remote_probe_resolves_through_the_server_and_the_doctor_lists_it(server):
    probe_id, log = server
    assert resolve_probe_id(board(probe_id)) == probe_id
    assert log.read_text().splitlines()[:2] == ["open", "close"]  # the harness asked the server's probe
    check = check_probes(board(probe_id))
    assert check.ok and probe_id in check.detail and "MCU-LINK CMSIS-DAP (fake)" in check.detail, check


def test_no_server_is_a_clear_error_at_once():
    probe_id = f"remote:{LOOPBACK}:{free_tcp_port()}"  # nothing listens there
    with pytest.raises(TargetError, match="no `pyocd server` answers.*pyocd server --port"):
        resolve_probe_id(board(probe_id))
    assert not check_probes(board(probe_id)).ok


def test_flashing_reaches_the_probe_behind_the_server(server, tmp_path):
    probe_id, log = server
    elf = tmp_path / "image.elf"
    elf.write_bytes(b"\x7fELF")
    # The fake has no target behind it, so pyOCD's own discovery, run through the server, finds no core.
    with pytest.raises(TargetError, match=f"opening probe {probe_id} .*No cores were discovered"):
        flash_image(board(probe_id), elf)
    calls = log.read_text().splitlines()
    assert any(c.startswith("connect") for c in calls) and any(c.startswith("read_dp") for c in calls), calls


def test_pyocd_gdbserver_reaches_the_probe_behind_the_server(server, tmp_path):
    probe_id, log = server
    gdbserver = PyocdGdbServer(probe_id=probe_id, target="cortex_m", log_path=tmp_path / "gdbserver.log")
    assert gdbserver.argv[gdbserver.argv.index("--uid") + 1] == probe_id
    with pytest.raises(TargetError):  # the fake has no target behind it: the server stops early
        gdbserver.start(timeout=60)
    calls = log.read_text().splitlines()
    assert calls.count("open") >= 1 and any(c.startswith("connect") for c in calls), calls
    assert gdbserver.process.returncode is not None


def test_a_remote_probe_needs_its_console_named():
    with pytest.raises(BoardConfigError, match="--port rfc2217://"):
        serial_url_for(board("remote:lab-pc:5555"), "remote:lab-pc:5555")
    cfg = board("remote:lab-pc:5555", **{"serial.url": "rfc2217://lab-pc:3000"})
    assert serial_url_for(cfg, "remote:lab-pc:5555") == "rfc2217://lab-pc:3000"
