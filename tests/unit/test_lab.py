"""The lab pieces that need no running lab: labgrid's printed answers, place resources, the lab file, claims.

The labgrid texts below are what labgrid-client 26.0.1 printed against a real coordinator (show, reserve,
reservations); the system tests (tests/system/test_labgrid_lab.py) run the same parsers live.
"""

from __future__ import annotations

import argparse
import threading

import pytest

from hil.base.errors import BoardConfigError, TimeoutExpired
from hil.lab.labfile import claim_board, load_lab, worker_index
from hil.lab.labgrid_cli import Resource, holder_pid, parse_reservations, parse_show, session_user, wait_states
from hil.lab.place import PlaceLease, lease_from
from hil.lab.session import LabOptions
from hil.config.options import OVERRIDES

SHOW_ACQUIRED = """Place 'qemu-1':
  matches:
    bench1/qemu-1/*
  acquired: vm/me.hil4242
  acquired resources:
    bench1/qemu-1/NetworkSerialPort/NetworkSerialPort
  created: 2026-11-30 10:00:35.124850
  changed: 2026-11-30 10:00:37.962306
  reservation: 63OZBFRJC0
Acquired resource 'NetworkSerialPort' (bench1/qemu-1/NetworkSerialPort/NetworkSerialPort):
  {'acquired': 'qemu-1',
   'avail': True,
   'cls': 'NetworkSerialPort',
   'params': {'extra': {'proxy': 'localhost', 'proxy_required': False},
              'host': '127.0.0.1',
              'port': 23456,
              'protocol': 'rfc2217',
              'speed': 115200}}
"""

SHOW_IDLE = """Place 'qemu-1':
  matches:
    bench1/qemu-1/*
  acquired: None
  acquired resources:
  created: 2026-11-30 10:00:35.124850
  changed: 2026-11-30 10:00:35.343591
Matching resource 'NetworkSerialPort' (bench1/qemu-1/NetworkSerialPort/NetworkSerialPort):
  {'acquired': None,
   'avail': True,
   'cls': 'NetworkSerialPort',
   'params': {'extra': {'proxy': 'localhost', 'proxy_required': False},
              'host': '127.0.0.1',
              'port': 23456,
              'protocol': 'rfc2217',
              'speed': 115200}}
"""

RESERVATIONS = """Reservation '63OZBFRJC0':
  owner: vm/me-1
  token: 63OZBFRJC0
  state: acquired
  filters:
    main: name=qemu-1
  allocations:
    main: qemu-1
  created: 2026-11-30 10:00:35.805999
  timeout: 2026-11-30 10:01:38.649407
Reservation 'XTX6W09A5X':
  owner: vm/me-2
  token: XTX6W09A5X
  state: waiting
  filters:
    main: name=qemu-1
  created: 2026-11-30 10:00:38.649396
  timeout: 2026-11-30 10:01:38.649398
"""


def test_show_is_read_as_labgrid_prints_it():
    state = parse_show(SHOW_ACQUIRED, "qemu-1")
    assert state.acquired == "vm/me.hil4242" and state.reservation == "63OZBFRJC0"
    (res,) = state.resources
    assert (res.exporter, res.group, res.cls) == ("bench1", "qemu-1", "NetworkSerialPort")
    assert res.params["port"] == 23456 and res.params["host"] == "127.0.0.1"
    idle = parse_show(SHOW_IDLE, "qemu-1")
    assert idle.acquired is None and idle.reservation is None and len(idle.resources) == 1


def test_reservations_and_wait_states_are_read_as_labgrid_prints_them():
    first, second = parse_reservations(RESERVATIONS)
    assert (first.token, first.owner, first.state, first.allocations) == ("63OZBFRJC0", "vm/me-1", "acquired", ("qemu-1",))
    assert (second.token, second.state, second.allocations) == ("XTX6W09A5X", "waiting", ())
    assert wait_states(RESERVATIONS) == ["acquired", "waiting"]


def test_holder_names_carry_the_pid_only_for_this_hosts_harness_sessions():
    assert session_user(4242).endswith(".hil4242")
    assert holder_pid("vm/me.hil4242", "vm") == 4242
    assert holder_pid("other-pc/me.hil4242", "vm") is None  # another host's pid says nothing here
    assert holder_pid("vm/alice", "vm") is None and holder_pid(None, "vm") is None  # a person, or nobody


def test_a_place_gives_its_console_and_its_probe():
    serial = Resource("pc1", "evk", "NetworkSerialPort", "console", {"host": "pc1", "port": 3001, "protocol": "rfc2217"})
    service = Resource("pc1", "evk", "NetworkService", "pyocd", {"address": "pc1", "port": 5556, "username": "pyocd"})
    debugger = Resource("pc1", "evk", "NetworkUSBDebugger", "USBDebugger", {"host": "pc1", "busnum": 1, "devnum": 4})
    state = parse_show(SHOW_IDLE, "evk")
    state.resources = [serial, debugger, service]
    lease = lease_from(state, "lab:20408", "vm/me.hil1")
    assert lease.console_url == "rfc2217://pc1:3001?ign_set_control" and lease.probe_id == "remote:pc1:5556"
    assert (lease.exporter, lease.exporter_host) == ("pc1", "pc1")
    state.resources = [serial, debugger]  # no pyocd service named: pyocd server's default port on the exporter
    assert lease_from(state, "lab:20408", "x").probe_id == "remote:pc1:5555"
    over = PlaceLease("evk", "lab:20408", "vm/me.hil1", "pc1", "pc1", "socket://pc1:1", None).overrides()
    assert over["serial.url"] == "socket://pc1:1" and over["lab.exporter_host"] == "pc1" and "pyocd.probe_id" not in over


LAB = """
[labgrid]
coordinator = "lab:20408"

[[boards]]
name = "evk-1"
board = "rt700"
probe = "0BFJXK2W3NM3J"
port = "/dev/ttyACM0"
tags = ["npu", "nightly"]

[[boards]]
name = "evk-2"
board = "rt700"
place = "rt700-evk-2"
tags = ["npu"]
[boards.settings]
"pyocd.frequency_hz" = 1000000

[[boards]]
name = "sim"
board = "qemu"
"""


@pytest.fixture
def lab(tmp_path, monkeypatch):
    monkeypatch.setenv("HIL_LOCK_DIR", str(tmp_path / "locks"))
    path = tmp_path / "lab.toml"
    path.write_text(LAB)
    return load_lab(path)


def test_the_lab_file_names_boards_with_probes_or_places(lab):
    assert lab.coordinator == "lab:20408" and [b.name for b in lab.candidates("rt700")] == ["evk-1", "evk-2"]
    assert [b.name for b in lab.candidates("rt700", frozenset({"nightly"}))] == ["evk-1"]
    evk1, evk2 = lab.candidates("rt700")
    assert evk1.overrides() == {"lab.board": "evk-1", "pyocd.probe_id": "0BFJXK2W3NM3J", "serial.url": "/dev/ttyACM0"}
    assert evk2.overrides() == {"lab.board": "evk-2", "place.name": "rt700-evk-2", "pyocd.frequency_hz": 1000000}


@pytest.mark.parametrize("bad, message", [
    ('[[boards]]\nname = "a"\nboard = "rt700"\nplace = "p"\nprobe = "X"\n', "either 'place' or 'probe'"),
    ('[[boards]]\nname = "a"\nboard = "rt700"\n[[boards]]\nname = "a"\nboard = "rt700"\n', "used twice: a"),
    ('[[boards]]\nname = "a"\nboard = "rt700"\nprobes = "X"\n', "unknown keys"),
    ('[[boards]]\nboard = "rt700"\n', "needs 'name' and 'board'"),
])
def test_lab_file_mistakes_are_named(tmp_path, bad, message):
    path = tmp_path / "lab.toml"
    path.write_text(bad)
    with pytest.raises(BoardConfigError, match=message):
        load_lab(path)


def test_each_claim_gets_its_own_board_and_a_third_waits_for_one(lab):
    lines: list[str] = []
    got: list[str] = []
    waiting = threading.Event()
    with claim_board(lab, "rt700", start=0) as first, claim_board(lab, "rt700", start=0) as second:
        assert {first.name, second.name} == {"evk-1", "evk-2"}  # never two claims on one board

        def third() -> None:
            def report(line: str) -> None:
                lines.append(line)
                waiting.set()

            with claim_board(lab, "rt700", timeout=60, report=report) as entry:
                got.append(entry.name)

        thread = threading.Thread(target=third)
        thread.start()
        assert waiting.wait(30) and got == []  # every board taken: it waits, it does not fail
    thread.join(30)
    assert got and got[0] in {"evk-1", "evk-2"}
    assert "all 2 'rt700' boards" in lines[0] and "evk-1" in lines[0]


def test_workers_start_at_their_own_board_and_give_up_after_the_timeout(lab):
    assert worker_index("gw3") == 3 and worker_index(None) == 0
    with claim_board(lab, "rt700", start=1) as entry:
        assert entry.name == "evk-2"
        with claim_board(lab, "rt700", start=1) as other:
            assert other.name == "evk-1"
            with pytest.raises(TimeoutExpired, match="busy"):
                with claim_board(lab, "rt700", timeout=0.2, report=lambda line: None):
                    pass
    with pytest.raises(BoardConfigError, match="no entry for board 'rt700' with tags"):
        with claim_board(lab, "rt700", tags=frozenset({"gpu"})):
            pass


def test_hil_probe_and_probe_are_one_option_and_lab_options_parse():
    parser = argparse.ArgumentParser()
    for opt in OVERRIDES:
        parser.add_argument(opt.short_flag, opt.flag, dest=opt.dest, type=opt.type, default=None)  # as `hil` does
    assert vars(parser.parse_args(["--hil-probe", "remote:pc1:5555"]))["hil_probe"] == "remote:pc1:5555"
    assert vars(parser.parse_args(["--probe", "ABC"]))["hil_probe"] == "ABC"
    options = LabOptions.from_values({"hil_place": "evk", "hil_lab_tags": "npu,nightly"}, "gw1")
    assert options.place == "evk" and options.lab_tags == ("npu", "nightly") and options.worker == "gw1"


def test_missing_labgrid_commands_name_what_this_install_can_run(tmp_path, monkeypatch):
    """A wheel install has no Makefile: the message gives the pip commands and HIL_LABGRID_BIN, and names
    `make lab-venv` only where the checkout that has it is the installed package's root."""
    import hil.lab.labgrid_cli as labgrid_cli

    monkeypatch.setenv("HIL_LABGRID_BIN", str(tmp_path))
    with pytest.raises(BoardConfigError) as checkout:
        labgrid_cli.labgrid_bin("labgrid-client")
    assert f"labgrid-client not found in {tmp_path}" in str(checkout.value)
    assert "make lab-venv" in str(checkout.value)  # this test runs from the checkout

    wheel_root = tmp_path / "site-packages"  # what REPO_ROOT is for an installed wheel: no Makefile beside
    wheel_root.mkdir()
    monkeypatch.setattr(labgrid_cli, "REPO_ROOT", wheel_root)
    with pytest.raises(BoardConfigError) as wheel:
        labgrid_cli.labgrid_bin("labgrid-client")
    text = str(wheel.value)
    assert "make" not in text and "\n" not in text
    assert "pip install labgrid==26.0.1" in text and "HIL_LABGRID_BIN=DIR/bin" in text


def test_the_labgrid_pin_named_to_users_is_the_one_make_lab_venv_installs():
    import re
    from pathlib import Path

    from hil.lab.labgrid_cli import LABGRID_PIN

    makefile = (Path(__file__).resolve().parents[2] / "Makefile").read_text(encoding="utf-8")
    assert re.search(r"^LABGRID_PIN := (\S+)$", makefile, re.M).group(1) == LABGRID_PIN
