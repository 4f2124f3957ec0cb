"""The RT700 board without a board: lock, console, flash errors (fake probe), and the real gdbserver's failure.

The console is pyserial's real `loop://` port and the gdbserver is the real `pyocd gdbserver`
process; only the probe behind pyOCD's API is the fake from fake_pyocd.py.
"""

from __future__ import annotations

from pathlib import Path

import time

import pytest
from fake_pyocd import FakeBench, FakeProbe

from hil.boards.base import RunPlan
from hil.boards.rt700 import RT700_OVERRIDES, Rt700Board, serial_url_for
from hil.config.board_config import load_board_config
from hil.base.errors import BoardConfigError, TargetError, TimeoutExpired
from hil.probe.gdbserver import PyocdGdbServer, gdbserver_argv
from hil.probe.lock import ProbeLock
from hil.boards.qemu_keep import unkept_children  # the session's kept QEMU is not a leak

UID = "0BFJXK2W3NM3J"


@pytest.fixture
def cfg(tmp_path, monkeypatch):
    monkeypatch.setenv("HIL_LOCK_DIR", str(tmp_path / "locks"))
    return load_board_config("rt700").with_overrides({"serial.url": "loop://", "pyocd.lock_timeout_s": 0.3})


@pytest.fixture
def elf(tmp_path):
    path = tmp_path / "hil_rt700.elf"
    path.write_bytes(b"\x7fELF fake image")
    return path


def test_board_file_and_override_map():
    cfg = load_board_config("rt700")
    assert cfg.kind == "rt700" and cfg.clock_mhz == 324
    assert cfg.get("pyocd.target") == "mimxrt798sgfob" and cfg.get("serial.baudrate") == 115200
    assert cfg.breakpoint == "hil_etdump_ready" and cfg.result_expr == "hil_etdump_result"
    # Every CLI override names a key the board file really has (a typo would be silently ignored).
    assert {"probe", "port", "target", "pack", "gdb", "breakpoint", "result_expr", "elf"} <= set(RT700_OVERRIDES)
    assert RT700_OVERRIDES["probe"] == "pyocd.probe_id" and RT700_OVERRIDES["port"] == "serial.url"
    for option, key in RT700_OVERRIDES.items():
        assert cfg.get(key) is not None, f"--{option} maps to missing key {key}"
    over = cfg.with_overrides({RT700_OVERRIDES["probe"]: UID, RT700_OVERRIDES["elf"]: "x.elf"})
    # a relative path typed on the command line is taken from the folder it was typed in
    assert over.get("pyocd.probe_id") == UID and over.get("firmware.elf") == str(Path.cwd() / "x.elf")
    assert any(r.contains(0x20430000, 0x100000) for r in cfg.ram_regions)  # the model section fits


def test_serial_url_follows_the_probe():
    cfg = load_board_config("rt700")
    assert serial_url_for(cfg, UID) == f"hwgrep://1FC9:0143 SER={UID}"
    assert serial_url_for(cfg.with_overrides({"serial.url": "/dev/ttyACM3"}), UID) == "/dev/ttyACM3"


def test_flash_takes_the_lock_opens_console_and_records_the_retry(monkeypatch, cfg, elf, tmp_path):
    bench = FakeBench(probes=[FakeProbe(UID)], flash_failures=1).install(monkeypatch)
    board = Rt700Board(cfg, tmp_path / "run")
    try:
        board.flash(elf)
        assert board.flash_report.attempts == 2 and any("2 attempts" in n for n in board.notes)
        assert {"lock_probe", "open_serial", "flash"} <= set(board.steps_s)
        assert ("reset", True) in bench.calls
        with pytest.raises(TimeoutExpired, match="in use by pid"):  # one board, one user
            ProbeLock(UID, timeout=0.2).acquire()
    finally:
        board.close()
    ProbeLock(UID, timeout=0.2).acquire().release()  # released by close()
    assert (tmp_path / "run" / "serial.log").exists()
    board.close()  # twice is fine


def test_flash_failure_surfaces_and_close_releases_everything(monkeypatch, cfg, elf, tmp_path):
    FakeBench(probes=[FakeProbe(UID)], flash_failures=5).install(monkeypatch)
    with Rt700Board(cfg, tmp_path / "run") as board:
        with pytest.raises(TargetError, match="failed twice"):
            board.flash(elf)
        assert board.flash_report.attempts == 2
    ProbeLock(UID, timeout=0.2).acquire().release()


def test_unknown_target_fails_before_touching_the_board(monkeypatch, cfg, elf, tmp_path):
    FakeBench(probes=[FakeProbe(UID)], known_targets=()).install(monkeypatch)
    with Rt700Board(cfg, tmp_path / "run") as board:
        with pytest.raises(BoardConfigError, match="pyocd pack install mimxrt798sgfob"):
            board.flash(elf)


def test_busy_probe_is_reported_with_its_holder(monkeypatch, cfg, elf, tmp_path):
    FakeBench(probes=[FakeProbe(UID)]).install(monkeypatch)
    with ProbeLock(UID, timeout=1):
        with Rt700Board(cfg, tmp_path / "run") as board:
            with pytest.raises(TimeoutExpired, match=f"probe {UID} is in use by pid"):
                board.flash(elf)


def test_run_before_flash_is_refused(cfg, tmp_path):
    with Rt700Board(cfg, tmp_path / "run") as board:
        with pytest.raises(TargetError, match="before flash"):
            board.run(timeout=1, plan=RunPlan(1))


def test_gdbserver_without_probe_fails_fast_and_leaves_no_process(tmp_path):
    """Real `pyocd gdbserver`, no probe on this machine: a clear error naming the log, no orphan."""
    log = tmp_path / "gdbserver.log"
    server = PyocdGdbServer(probe_id="NOSUCHPROBE42", target="mimxrt798sgfob", log_path=log)
    start = time.monotonic()
    with pytest.raises(TargetError) as err:
        server.start(timeout=20)
    assert time.monotonic() - start < 20
    assert str(log) in str(err.value) and "NOSUCHPROBE42" in str(err.value)
    assert "unrecognized arguments" not in log.read_text()  # every flag we pass exists in pyOCD 0.46.0
    assert server.process.returncode is not None and unkept_children() == []


def test_gdbserver_argv_never_waits_or_prompts():
    argv = gdbserver_argv(port=4000, probe_id=UID, target="mimxrt798sgfob", pack="/p.pack", frequency_hz=1000)
    assert argv[argv.index("--uid") + 1] == UID and "--no-wait" in argv and "--persist" in argv
    assert argv[argv.index("--pack") + 1] == "/p.pack" and argv[argv.index("--port") + 1] == "4000"
