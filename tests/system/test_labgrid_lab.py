"""Places through a real labgrid lab on loopback: coordinator, exporter and ser2net running, QEMU writing a pty.

Each test runs whole `pytest --board qemu --hil-place ...` sessions as a lab user would, and checks them
against what labgrid itself says (`labgrid-client show`) and against a run taken without labgrid.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path

import pytest
from labgrid_lab import LocalLab, loopback_env
from test_no_orphans import processes_tagged

from hil.lab.labgrid_cli import session_user
from hil.boards.qemu_keep import unkept_children  # a QEMU this session keeps is not the lab's

REPO = Path(__file__).resolve().parents[2]
SESSION_TIMEOUT_S = 600

PROFILE_TEST = textwrap.dedent(
    """
    import os
    import time
    from pathlib import Path

    def test_profile(hil_profile):
        run = hil_profile("cifar10", iterations=3, subdir="run")  # simulated NPU: seeded, repeatable
        hold = os.environ.get("HIL_TEST_HOLD")
        if hold:  # keep the place until the test says go
            Path(hold, "ready").write_text(str(os.getpid()))
            deadline = time.monotonic() + 300
            while not Path(hold, "go").exists() and time.monotonic() < deadline:
                time.sleep(0.1)
    """
)

HOLD_ONLY_TEST = textwrap.dedent(
    """
    import os
    import time
    from pathlib import Path

    def test_hold_the_place(hil_board_config):
        Path(os.environ["HIL_TEST_HOLD"], "ready").write_text(hil_board_config.get("lab.holder"))
        time.sleep(600)  # killed here
    """
)


@pytest.fixture
def lab(tmp_path):
    tag = uuid.uuid4().hex
    lab = LocalLab(tmp_path / "lab", ["qemu-a", "qemu-b"], tag=tag).start()
    try:
        yield lab
    finally:
        lab.close()
    assert processes_tagged(tag) == [], "a lab process outlived the lab"
    assert unkept_children() == []


def board_file(tmp_path: Path, lab: LocalLab, place: str) -> Path:
    """boards/qemu.toml with UART0 on a pty at the path the lab's ser2net serves for `place`."""
    text = (REPO / "boards" / "qemu.toml").read_text()
    text = text.replace('cpu = "cortex-m33"', f'cpu = "cortex-m33"\nserial_pty = "{lab.console_links[place]}"')
    path = tmp_path / f"board-{place}.toml"
    path.write_text(text)
    return path


def session(tmp_path: Path, name: str, test: str, *args: str, env: dict[str, str] | None = None) -> subprocess.Popen:
    """A child `pytest --board qemu` session running `test`; output in tmp_path/name.out."""
    folder = tmp_path / name
    folder.mkdir()
    (folder / f"test_{name}.py").write_text(test)
    out = open(folder / "out.txt", "w")
    return subprocess.Popen(
        [sys.executable, "-m", "pytest", "-q", "-s", "-p", "no:cacheprovider", "--board", "qemu",
         "--hil-artifacts", str(folder / "artifacts"), "--rootdir", str(folder), *args, str(folder)],
        cwd=REPO, env=loopback_env(**(env or {})), stdout=out, stderr=subprocess.STDOUT, text=True,
        start_new_session=True,
    )


def finish(child: subprocess.Popen, timeout: float = SESSION_TIMEOUT_S) -> str:
    try:
        child.wait(timeout=timeout)
    finally:
        if child.poll() is None:
            os.killpg(child.pid, signal.SIGKILL)
            child.wait(timeout=30)
    return Path(child.args[-1], "out.txt").read_text()


def wait_for(path: Path, child: subprocess.Popen, what: str) -> None:
    deadline = time.monotonic() + SESSION_TIMEOUT_S
    while not path.exists():
        assert child.poll() is None, f"{what}: the session ended first:\n{finish(child)[-3000:]}"
        assert time.monotonic() < deadline, what
        time.sleep(0.1)


def run_folder(tmp_path: Path, name: str) -> Path:
    (folder,) = (tmp_path / name / "artifacts").glob("*/run")
    return folder


def comparable(profile: dict) -> dict:
    """A profile without what differs between any two runs (the harness's own step times)."""
    return {k: v for k, v in profile.items() if k != "harness_steps_s"}


def test_a_profile_through_a_place_equals_one_taken_without_labgrid(tmp_path, lab):
    via = session(tmp_path, "via_place", PROFILE_TEST, "--hil-board-config", str(board_file(tmp_path, lab, "qemu-a")),
                  "--hil-place", "qemu-a", "--hil-coordinator", lab.coordinator)
    direct = session(tmp_path, "direct", PROFILE_TEST)
    for child in (via, direct):
        out = finish(child)
        assert child.returncode == 0, out[-3000:]
    with_lab, without = run_folder(tmp_path, "via_place"), run_folder(tmp_path, "direct")
    profile = json.loads((with_lab / "profile.json").read_text())
    assert comparable(profile) == comparable(json.loads((without / "profile.json").read_text()))
    assert (with_lab / "serial.log").read_text() == (without / "serial.log").read_text()
    manifest = json.loads((with_lab / "manifest.json").read_text())
    assert manifest["lab"]["place"] == "qemu-a" and manifest["lab"]["exporter"] == lab.exporter_name
    assert manifest["lab"]["exporter_host"] == "127.0.0.1"
    assert "lab" not in json.loads((without / "manifest.json").read_text())
    # The console really came through ser2net: QEMU's log names its pty, the place's URL its port.
    assert "char device redirected to /dev/pts/" in (with_lab / "qemu.log").read_text()
    assert manifest["lab"]["console"] == f"rfc2217://127.0.0.1:{lab.ser2net_ports['qemu-a']}?ign_set_control"
    state = lab.client().show("qemu-a")
    assert state.acquired is None and state.reservation is None  # released at the end
    assert lab.client().reservations() == []


def test_a_second_session_waits_for_the_place_and_then_runs(tmp_path, lab):
    board = str(board_file(tmp_path, lab, "qemu-b"))
    args = ("--hil-board-config", board, "--hil-place", "qemu-b", "--hil-coordinator", lab.coordinator)
    hold = tmp_path / "hold"
    hold.mkdir()
    first = session(tmp_path, "first", PROFILE_TEST, *args, env={"HIL_TEST_HOLD": str(hold)})
    try:
        wait_for(hold / "ready", first, "first session never profiled")
        holder = f"{lab.client().show('qemu-b').acquired}"
        assert holder.endswith(f".hil{(hold / 'ready').read_text()}")  # labgrid names the first session
        second = session(tmp_path, "second", PROFILE_TEST, *args)
        out_path = tmp_path / "second" / "out.txt"
        deadline = time.monotonic() + SESSION_TIMEOUT_S
        while f"place qemu-b is held by {holder}" not in out_path.read_text():
            assert second.poll() is None, out_path.read_text()[-3000:]
            assert time.monotonic() < deadline, "the second session never said it waits"
            time.sleep(0.2)
        assert not (tmp_path / "second" / "artifacts").exists()  # it waits, it does not run
    finally:
        (hold / "go").write_text("go")
    out = finish(first)
    assert first.returncode == 0, out[-3000:]
    out = finish(second)
    assert second.returncode == 0, out[-3000:]
    manifest = json.loads((run_folder(tmp_path, "second") / "manifest.json").read_text())
    assert manifest["lab"]["place"] == "qemu-b" and manifest["lab"]["holder"] != holder


def test_a_killed_session_leaves_the_place_acquired_and_the_next_takes_it_back(tmp_path, lab):
    hold = tmp_path / "hold"
    hold.mkdir()
    args = ("--hil-place", "qemu-a", "--hil-coordinator", lab.coordinator)
    killed = session(tmp_path, "killed", HOLD_ONLY_TEST, *args, env={"HIL_TEST_HOLD": str(hold)})
    wait_for(hold / "ready", killed, "the session never acquired the place")
    holder = (hold / "ready").read_text()
    os.killpg(killed.pid, signal.SIGKILL)  # no finally, no atexit: nothing releases the place
    finish(killed)
    # labgrid's own semantics: a place stays acquired until released; nobody notices the holder died.
    assert lab.client().show("qemu-a").acquired == holder
    with pytest.raises(Exception, match="already acquired"):
        lab.client(user=session_user()).run("-p", "qemu-a", "acquire")
    board = str(board_file(tmp_path, lab, "qemu-a"))
    nxt = session(tmp_path, "next", PROFILE_TEST, "--hil-board-config", board, *args)
    out = finish(nxt)
    assert nxt.returncode == 0, out[-3000:]
    assert f"its holder {holder} is dead" in out
    manifest = json.loads((run_folder(tmp_path, "next") / "manifest.json").read_text())
    assert manifest["lab"]["took_over_from"] == holder
    assert lab.client().show("qemu-a").acquired is None


def test_a_lab_file_gives_each_xdist_worker_its_own_place(tmp_path, lab):
    lab_file = tmp_path / "lab.toml"
    entries = [f'[labgrid]\ncoordinator = "{lab.coordinator}"\n']
    for place in lab.places:
        entries.append(f'[[boards]]\nname = "{place}-board"\nboard = "qemu"\nplace = "{place}"\ntags = ["sim"]\n'
                       f'[boards.settings]\n"qemu.serial_pty" = "{lab.console_links[place]}"\n')
    lab_file.write_text("\n".join(entries))
    test = PROFILE_TEST.replace("def test_profile(", "import pytest\n@pytest.mark.parametrize('n', range(4))\n"
                                "def test_profile(n, ").replace('subdir="run"', 'subdir=f"run{n}"')
    child = session(tmp_path, "xdist", test, "-n", "2", "--hil-lab", str(lab_file), "--hil-lab-tags", "sim")
    out = finish(child)
    assert child.returncode == 0 and "4 passed" in out, out[-3000:]
    used: dict[str, set[str]] = {}
    for manifest in (tmp_path / "xdist" / "artifacts").glob("*/run*/manifest.json"):
        record = json.loads(manifest.read_text())["lab"]
        used.setdefault(record["holder"], set()).add(record["place"])
    assert len(used) == 2, used  # two workers ...
    places = [next(iter(p)) for p in used.values()]
    assert all(len(p) == 1 for p in used.values()) and sorted(places) == ["qemu-a", "qemu-b"], used  # ... a place each


def test_hil_run_takes_a_place_too(tmp_path, lab):
    out = tmp_path / "cli-run"
    done = subprocess.run(
        [sys.executable, "-m", "hil.cli.main", "run", "--board-config", str(board_file(tmp_path, lab, "qemu-b")),
         "--hil-place", "qemu-b", "--hil-coordinator", lab.coordinator, "--model", "cifar10", "--iterations", "2",
         "--out", str(out)],
        cwd=REPO, env=loopback_env(), capture_output=True, text=True, timeout=SESSION_TIMEOUT_S,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    assert json.loads((out / "manifest.json").read_text())["lab"]["place"] == "qemu-b"
    assert lab.client().show("qemu-b").acquired is None


def test_a_cancelled_session_sigterm_releases_its_place(tmp_path, lab):
    hold = tmp_path / "hold"
    hold.mkdir()
    child = session(tmp_path, "cancelled", HOLD_ONLY_TEST, "--hil-place", "qemu-b", "--hil-coordinator",
                    lab.coordinator, env={"HIL_TEST_HOLD": str(hold)})
    wait_for(hold / "ready", child, "the session never acquired the place")
    assert lab.client().show("qemu-b").acquired == (hold / "ready").read_text()
    child.send_signal(signal.SIGTERM)  # a cancelled CI job
    out = finish(child, timeout=120)
    assert child.returncode != 0 and "KeyboardInterrupt" in out, out[-2000:]
    state = lab.client().show("qemu-b")
    assert state.acquired is None and state.reservation is None and lab.client().reservations() == []


def test_an_rt700_place_lends_its_console_and_probe_server_and_the_board_flashes_through_them(tmp_path, monkeypatch):
    """The RT700 board on a place: its VCOM through ser2net, its MCU-Link through `pyocd server` (the one fake:
    the probe behind that server, tests/unit/fake_probe_server.py)."""
    sys.path.insert(0, str(REPO / "tests" / "unit"))
    from fake_probe_server import build_ram_image, start_server, written_memory

    from hil.boards.rt700 import Rt700Board
    from hil.config.board_config import load_board_config
    from hil.lab.session import LabOptions, held_board

    monkeypatch.setenv("HIL_LOCK_DIR", str(tmp_path / "locks"))
    server, probe_id, calls = start_server(tmp_path)
    tag = uuid.uuid4().hex
    lab = None
    vcom, vcom_device = os.openpty()  # the EVK's USB serial port; the test holds the board's end
    try:
        lab = LocalLab(tmp_path / "lab", ["rt700-evk"], tag=tag,
                       pyocd_servers={"rt700-evk": int(probe_id.rsplit(":", 1)[1])}).start()
        lab.console_links["rt700-evk"].symlink_to(os.ttyname(vcom_device))
        elf, address, data = build_ram_image(tmp_path)
        cfg = load_board_config("rt700").with_overrides({"pyocd.target": "max32630"})  # a target the fake carries
        with held_board(cfg, LabOptions(place="rt700-evk", coordinator=lab.coordinator)) as held:
            assert held.get("pyocd.probe_id") == probe_id
            assert held.get("serial.url") == f"rfc2217://127.0.0.1:{lab.ser2net_ports['rt700-evk']}?ign_set_control"
            with Rt700Board(held, tmp_path / "run") as board:
                board.flash(elf)
                os.write(vcom, b"Core/NPU Frequency: 324 MHz\r\n")
                deadline = time.monotonic() + 30
                while b"Core/NPU Frequency" not in (tmp_path / "run" / "serial.log").read_bytes():
                    assert time.monotonic() < deadline, "the console never came through ser2net"
                    time.sleep(0.05)
            assert board.flash_report.probe_id == probe_id
            assert written_memory(calls)[address][: len(data)] == data  # the image reached the target
        assert lab.client().show("rt700-evk").acquired is None
    finally:
        if lab is not None:
            lab.close()
        server.close()
        os.close(vcom)
        os.close(vcom_device)
    assert processes_tagged(tag) == [] and unkept_children() == []
