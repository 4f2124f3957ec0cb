"""After a whole pytest session, passing and failing runs alike, no QEMU or GDB process it started is left."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import uuid
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
TARGET_NAMES = ("qemu-system-arm", "gdb-multiarch")

CHILD_TESTS = textwrap.dedent(
    """
    import pytest
    from hil.errors import TargetError

    def test_profile_passes(hil_profile):
        assert hil_profile("cifar10", delegate="none", iterations=1).profile["events"]

    def test_profile_fails_at_a_missing_breakpoint(hil_profile, hil_board_config):
        broken = hil_board_config.with_overrides({"debug.breakpoint": "no_such_function"})
        with pytest.raises(TargetError):
            hil_profile("cifar10", delegate="none", iterations=1, board=broken)
    """
)


def processes_tagged(tag: str) -> list[str]:
    """Command lines of live processes whose environment carries `tag` (children inherit it)."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            environ = (proc / "environ").read_bytes()
            cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if f"HIL_SESSION_TAG={tag}".encode() in environ:
            found.append(cmdline)
    return found


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
