"""`--hil-probe remote:HOST:PORT`: a probe served by pyOCD's own `pyocd server`, reached by pyOCD's own client.

Everything is real except the probe behind the server (tests/unit/fake_probe_server.py, a probe with the
least of a Cortex-M4 behind it): resolution, the doctor's listing, flashing (pyOCD's discovery and loader)
and `pyocd gdbserver` with gdb on top all talk pyOCD's remote-probe protocol to it.
"""

from __future__ import annotations


import pytest
from fake_probe_server import build_ram_image, start_server, written_memory

from hil.config.board_config import load_board_config
from hil.cli.doctor import check_probes
from hil.base.errors import BoardConfigError, TargetError
from hil.probe.gdbserver import PyocdGdbServer
from hil.probe.pyocd_flash import flash_image, resolve_probe_id
from hil.boards.rt700 import serial_url_for
from hil.target.gdbmi import GdbMiSession
from hil.target.ports import LOOPBACK, free_tcp_port
from hil.boards.qemu_keep import unkept_children  # the session's kept QEMU is not a leak

UID = "0BFJXK2W3NM3J"


@pytest.fixture
def server(tmp_path):
    """`pyocd server` on a free loopback port with the fake probe behind it; (probe id, the probe's call log)."""
    process, probe_id, log = start_server(tmp_path)
    try:
        yield probe_id, log
    finally:
        process.close()
    assert unkept_children() == []


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


@pytest.fixture
def ram_image(tmp_path):
    return build_ram_image(tmp_path)


def test_flashing_through_the_server_writes_the_image_into_the_target(server, ram_image):
    probe_id, log = server
    elf, address, data = ram_image
    report = flash_image(board(probe_id, **{"pyocd.target": "max32630"}), elf)
    assert report.attempts == 1 and report.probe_id == probe_id
    assert written_memory(log)[address][: len(data)] == data  # what the target behind the server received


def test_a_second_flash_of_the_same_image_is_read_back_through_real_pyocd_and_skipped(server, ram_image):
    """pyOCD's own target reads (read_memory_block8 through the server) back the first flash's bytes."""
    probe_id, log = server
    elf, address, data = ram_image
    cfg = board(probe_id, **{"pyocd.target": "max32630"})
    assert flash_image(cfg, elf).done == "programmed"
    report = flash_image(cfg, elf)
    assert report.done == "skipped" and "read back through the probe" in report.why, report
    assert written_memory(log)[address][: len(data)] == data


def test_pyocd_gdbserver_on_a_remote_probe_serves_gdb(server, ram_image, tmp_path):
    probe_id, log = server
    elf, address, data = ram_image
    flash_image(board(probe_id, **{"pyocd.target": "max32630"}), elf)
    gdbserver = PyocdGdbServer(probe_id=probe_id, target="max32630", log_path=tmp_path / "gdbserver.log")
    assert gdbserver.argv[gdbserver.argv.index("--uid") + 1] == probe_id
    gdbserver.start(timeout=60)
    try:
        with GdbMiSession("gdb-multiarch", elf, tmp_path / "mi.log") as gdb:
            gdb.connect(LOOPBACK, gdbserver.port, timeout=30)
            assert gdb.read_memory(address, len(data)) == data  # through gdb, pyocd gdbserver, pyocd server
    finally:
        gdbserver.close()


def test_the_target_support_is_needed_where_pyocd_runs_the_target_not_on_the_probe_host(server, tmp_path):
    probe_id, _log = server
    elf = tmp_path / "image.elf"
    elf.write_bytes(b"\x7fELF")
    with pytest.raises(BoardConfigError, match="pyocd pack install mimxrt798sgfob"):
        flash_image(board(probe_id, **{"pyocd.target": "mimxrt798sgfob"}), elf)


def test_a_remote_probe_needs_its_console_named():
    with pytest.raises(BoardConfigError, match="--port rfc2217://"):
        serial_url_for(board("remote:lab-pc:5555"), "remote:lab-pc:5555")
    cfg = board("remote:lab-pc:5555", **{"serial.url": "rfc2217://lab-pc:3000"})
    assert serial_url_for(cfg, "remote:lab-pc:5555") == "rfc2217://lab-pc:3000"
