"""After a whole pytest session, passing and failing runs alike, no QEMU or GDB process it started is left."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import uuid
from pathlib import Path

import pytest
from orphans import left_after, processes_tagged

REPO = Path(__file__).resolve().parents[2]
TARGET_NAMES = ("qemu-system-arm", "gdb-multiarch")

CHILD_TESTS = textwrap.dedent(
    """
    import pytest
    from hil.base.errors import TargetError

    def test_profile_passes(hil_profile):
        assert hil_profile("cifar10", delegate="none", iterations=1).profile["events"]

    def test_profile_fails_at_a_missing_breakpoint(hil_profile, hil_board_config):
        # a file:line location: the symbol table cannot refuse it, gdb does, with QEMU up (no_such_function
        # would be refused before QEMU starts, hil.target.elf_preflight)
        broken = hil_board_config.with_overrides({"debug.breakpoint": "no_such_file.c:1"})
        with pytest.raises(TargetError):
            hil_profile("cifar10", delegate="none", iterations=1, board=broken)
    """
)


def test_a_pytest_session_leaves_no_qemu_or_gdb_running(tmp_path):
    (tmp_path / "test_child.py").write_text(CHILD_TESTS)
    tag = uuid.uuid4().hex
    artifacts = tmp_path / "artifacts"
    env = {**os.environ, "HIL_SESSION_TAG": tag}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--board", "qemu",
         "--hil-artifacts", str(artifacts), "--rootdir", str(tmp_path), str(tmp_path / "test_child.py")],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=900,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert "2 passed" in done.stdout
    assert list(artifacts.rglob("qemu.log")), "the child session never started QEMU: nothing was checked"
    left = [cmd for cmd in processes_tagged(tag) if any(name in cmd for name in TARGET_NAMES)]
    assert left == [], f"processes left running after the session: {left}"


HOLDING_TEST = textwrap.dedent(
    """
    import os
    import time
    from pathlib import Path

    from hil.boards.qemu import QemuBoard
    from hil.firmware.qemu_image import build_qemu_image

    def test_holds_qemu_until_cancelled(hil_board_config):
        hold = Path(os.environ["HIL_HOLD_DIR"])
        board = QemuBoard(hil_board_config, hold)
        board.flash(build_qemu_image(bytes(64), ["holding"], runs=1))
        (hold / "ready").write_text("flashed")
        time.sleep(600)  # a job cancelled here must not leave QEMU or gdb running
    """
)


def test_a_cancelled_session_sigterm_leaves_no_qemu_or_gdb_running(tmp_path):
    import signal
    import time

    (tmp_path / "test_hold.py").write_text(HOLDING_TEST)
    hold = tmp_path / "hold"
    hold.mkdir()
    tag = uuid.uuid4().hex
    env = {**os.environ, "HIL_SESSION_TAG": tag, "HIL_HOLD_DIR": str(hold)}
    child = subprocess.Popen(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--board", "qemu",
         "--rootdir", str(tmp_path), str(tmp_path / "test_hold.py")],
        cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )
    try:
        deadline = time.monotonic() + 300
        while not (hold / "ready").exists():
            assert child.poll() is None, child.stdout.read()
            assert time.monotonic() < deadline, "the child never flashed QEMU"
            time.sleep(0.2)
        running = [cmd for cmd in processes_tagged(tag) if any(name in cmd for name in TARGET_NAMES)]
        assert len(running) == 2, running  # QEMU and gdb are up: the cancellation has something to clean
        child.send_signal(signal.SIGTERM)
        output, _ = child.communicate(timeout=60)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait(timeout=30)
    assert child.returncode != 0 and "KeyboardInterrupt" in output, output[-2000:]
    left = [cmd for cmd in processes_tagged(tag) if any(name in cmd for name in TARGET_NAMES)]
    assert left == [], f"processes left running after SIGTERM: {left}"


# --- a bench job killed with SIGKILL: its pyocd gdbserver must not keep the probe from the next job ---

PROBE = "0BFJXK2W3NM3J"

KILLED_JOB = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from hil.probe.lock import ProbeLock
    from hil.target.process import ManagedProcess

    out, argv = Path(sys.argv[1]), sys.argv[2:]
    ProbeLock(argv[argv.index("--uid") + 1]).acquire()
    server = ManagedProcess(argv, "pyocd gdbserver", out / "gdbserver.log").start()
    (out / "pid").write_text(str(server.pid))
    time.sleep(600)
    """
)


def waiting_gdbserver_argv(probe: str) -> list[str]:
    """The harness's own `pyocd gdbserver` command line, minus `--no-wait`: with no probe attached
    here, the real server then waits for it forever, as a server holding a probe stays up."""
    from hil.probe.gdbserver import gdbserver_argv
    from hil.target.ports import free_tcp_port

    return [arg for arg in gdbserver_argv(port=free_tcp_port(), probe_id=probe, target="cortex_m") if arg != "--no-wait"]


def gone(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return True
    return state in ("Z", "X")


def gone_within(pid: int, seconds: float) -> bool:
    import time

    deadline = time.monotonic() + seconds
    while not gone(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    return gone(pid)


def next_job_flashes(monkeypatch, tmp_path: Path) -> list[str]:
    """A bench job on the same probe (pyOCD's probe API faked, as everywhere): its notes after flash()."""
    sys.path.insert(0, str(REPO / "tests" / "unit"))
    from fake_pyocd import FakeBench, FakeProbe

    from hil.boards.rt700 import Rt700Board
    from hil.config.board_config import load_board_config

    FakeBench(probes=[FakeProbe(PROBE)]).install(monkeypatch)
    cfg = load_board_config("rt700").with_overrides({"serial.url": "loop://", "pyocd.lock_timeout_s": 5})
    elf = tmp_path / "image.elf"
    elf.write_bytes(b"\x7fELF stands in for an image: the fake probe takes any bytes")
    with Rt700Board(cfg, tmp_path / "next-job") as board:
        board.flash(elf)
        return list(board.notes)


def test_a_sigkilled_bench_job_leaves_no_gdbserver_and_the_next_job_gets_the_probe(tmp_path, monkeypatch):
    import signal
    import time

    monkeypatch.setenv("HIL_LOCK_DIR", str(tmp_path / "locks"))
    (tmp_path / "job.py").write_text(KILLED_JOB)
    job = subprocess.Popen([sys.executable, str(tmp_path / "job.py"), str(tmp_path), *waiting_gdbserver_argv(PROBE)],
                           cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)})
    try:
        deadline = time.monotonic() + 60
        while not (tmp_path / "pid").exists() or not (tmp_path / "pid").read_text():
            assert job.poll() is None and time.monotonic() < deadline, "the job never started its gdbserver"
            time.sleep(0.05)
        server = int((tmp_path / "pid").read_text())
        time.sleep(1.0)
        assert not gone(server), (tmp_path / "gdbserver.log").read_text()
        job.send_signal(signal.SIGKILL)
        job.wait(timeout=30)
        assert gone_within(server, 5), f"pyocd gdbserver (pid {server}) outlived its SIGKILLed job"
    finally:
        if job.poll() is None:
            job.kill()
            job.wait()
    start = time.monotonic()
    next_job_flashes(monkeypatch, tmp_path)
    assert time.monotonic() - start < 5  # the probe lock died with the job: no wait for it


def test_a_gdbserver_that_outlived_its_job_is_ended_by_the_next_job(tmp_path, monkeypatch):
    monkeypatch.setenv("HIL_LOCK_DIR", str(tmp_path / "locks"))
    # Detached, as a server from a job whose harness did not make it die with it.
    stale = subprocess.Popen(waiting_gdbserver_argv(PROBE), start_new_session=True, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
    other = subprocess.Popen(waiting_gdbserver_argv("ANOTHERPROBE1"), start_new_session=True,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        import time

        time.sleep(1.0)  # both are up and waiting for their probes
        assert stale.poll() is None and other.poll() is None
        notes = next_job_flashes(monkeypatch, tmp_path)
        assert any(f"pid {stale.pid}" in note and "stale pyocd gdbserver" in note for note in notes), notes
        assert stale.wait(timeout=5) is not None
        assert other.poll() is None, "a gdbserver for another probe was ended"
    finally:
        for proc in (stale, other):
            if proc.poll() is None:
                proc.kill()
                proc.wait()


# --- `kill -9` of `hil run` at any moment: while it connects, at the breakpoint, with a hanging target ---

def start_hil_run(out: Path, tag: str, *extra: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "hil.cli.main", "run", "--board", "qemu", "--model", "cifar10", "--no-delegate",
         "--iterations", "1", "--out", str(out), *extra],
        cwd=REPO, env={**os.environ, "HIL_SESSION_TAG": tag}, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )


def wait_until(condition, proc: subprocess.Popen, timeout: float = 300, poll: float = 0.005) -> bool:
    """Poll `condition` until it holds (True), or the run ended or the time ran out (False)."""
    import time

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and proc.poll() is None:
        if condition():
            return True
        time.sleep(poll)
    return False


def read(path: Path) -> str:
    try:
        return path.read_text(errors="replace")
    except OSError:
        return ""


MOMENTS = {
    # QEMU is up, gdb is attaching: the moment the issue saw QEMU left halted, holding two ports.
    "connect": lambda out, tag: any("qemu-system-arm" in cmd for cmd in processes_tagged(tag)),
    # gdb reports the stop at hil_etdump_ready; the harness is reading the ETDump.
    "breakpoint": lambda out, tag: '"func":"hil_etdump_ready"' in read(out / "mi.log"),
    # the image printed its console and spins in replay_hang(): QEMU at full speed.
    "hang": lambda out, tag: "Starting the model execution" in read(out / "serial.log"),
}


@pytest.fixture(scope="module")
def hanging_elf() -> Path:
    from hil.firmware.qemu_image import build_qemu_image

    return build_qemu_image(bytes(64), ["Starting the model execution..."], runs=1, fault="hang")


@pytest.mark.parametrize("moment", list(MOMENTS))
def test_sigkill_of_hil_run_leaves_no_process(tmp_path, hanging_elf, moment):
    import signal
    import time

    extra = ("--elf", str(hanging_elf), "--timeout", "600") if moment == "hang" else ()
    for attempt in range(5):  # the breakpoint is passed in milliseconds: try again if the kill came late
        out, tag = tmp_path / f"run{attempt}", uuid.uuid4().hex
        run = start_hil_run(out, tag, *extra)
        try:
            reached = wait_until(lambda: MOMENTS[moment](out, tag), run)
            if reached and moment == "hang":
                time.sleep(1.0)  # spinning for a while
            run.send_signal(signal.SIGSTOP)  # freeze it at that moment, then kill it outright
            target_up = any("qemu-system-arm" in cmd for cmd in processes_tagged(tag))
            run.send_signal(signal.SIGKILL)
            assert run.wait(timeout=30) == -signal.SIGKILL
        finally:
            if run.poll() is None:
                run.kill()
                run.wait()
        start = time.monotonic()
        left = left_after(tag, 5.0)
        assert left == [], f"left running {time.monotonic() - start:.1f} s after kill -9 at {moment}: {left}"
        assert (out / "qemu.log").is_file()  # what it captured is kept
        assert moment == "connect" or (out / "serial.log").is_file()
        if reached and target_up:
            return
    pytest.fail(f"never caught hil run {moment} with QEMU up in 5 attempts")
