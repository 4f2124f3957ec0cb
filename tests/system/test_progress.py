"""Progress people can see: step lines as each step starts, bars on a terminal, plain lines in logs, -q quiet.

The terminal cases run the real `hil` on a pseudo-terminal (pty.openpty), as a person at a
console sees it; the log case reads a pipe, as CI does.
"""

from __future__ import annotations

import os
import pty
import re
import select
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from hil.base.progress import BAR_DELAY_S, Terminal

REPO = Path(__file__).resolve().parents[2]
RUN = [sys.executable, "-m", "hil.cli.main", "run", "--board", "qemu", "--model", "cifar10", "--no-delegate",
       "--iterations", "1"]
# The image steps: the runtime image's where the pinned sources are (make test names them in RT700_SDK_DIR), else
# the replay image's.
_SOURCES = os.environ.get("RT700_SDK_DIR", "")
IMAGE_STEPS = (["build the QEMU runtime image (ExecuTorch on the emulated Cortex-M33)…", "flash hil_qemu_runtime.elf to qemu…"]
               if _SOURCES and Path(_SOURCES, "workspace.env").is_file() else
               ["simulate the ETDump of cifar10 (1 runs)…", "build the QEMU replay image…", "flash firmware.elf to qemu…"])
STEPS = ["import torch, executorch…", "export cifar10 (", *IMAGE_STEPS, "run iterations 1, warm-up 0 and read out",
         "analyse the ETDump with the ETRecord…"]


def _read_pty(master: int, proc: subprocess.Popen, timeout: float) -> tuple[bytes, float | None]:
    """Everything the child wrote to its terminal, and seconds until its first `[hil]` line."""
    start, first, out = time.monotonic(), None, b""
    while time.monotonic() - start < timeout:
        ready, _, _ = select.select([master], [], [], 0.1)
        if ready:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # the child closed its side
                break
            out += chunk
            if first is None and b"[hil] " in out:
                first = time.monotonic() - start
        elif proc.poll() is not None:
            break
    return out, first


def test_a_cold_run_on_a_terminal_says_what_it_is_doing_at_once(tmp_path):
    master, slave = pty.openpty()
    proc = subprocess.Popen([*RUN, "--out", str(tmp_path / "run"), "-v"], stdin=slave, stdout=slave, stderr=slave,
                            cwd=tmp_path, env=os.environ.copy(), close_fds=True)
    os.close(slave)
    try:
        out, first = _read_pty(master, proc, timeout=600)
    finally:
        os.close(master)
        proc.wait(timeout=60)
    text = out.decode(errors="replace")
    assert proc.returncode == 0, text[-3000:]
    assert first is not None and first < 5.0, f"first step line after {first} s"  # well within a second, usually
    assert text.index("[hil] import torch, executorch…") < text.index("Method::execute")  # before any heavy work
    positions = [text.index(step) for step in STEPS]
    assert positions == sorted(positions), text[:3000]
    took = float(re.search(r"\[hil\] import: ([\d.]+) s", text).group(1))
    if took > BAR_DELAY_S + 1.0:  # importing torch takes seconds: the bar showed it was alive meanwhile
        assert re.search(r"\r  import: 00:0[1-9]", text), text[:2000]


def test_not_on_a_terminal_plain_lines_and_quiet_with_q(tmp_path):
    done = subprocess.run([*RUN, "--out", str(tmp_path / "a"), "-v"], capture_output=True, text=True, timeout=600,
                          cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    lines = done.stderr.splitlines()
    for step in STEPS:
        assert any(line.startswith("[hil] ") and step in line for line in lines), step
    assert "\r" not in done.stderr  # no bar redraws in a log
    assert any(line.startswith("[hil] aot: ") and line.endswith(" s") for line in lines)  # -v: durations
    quiet = subprocess.run([*RUN, "--out", str(tmp_path / "b"), "-q"], capture_output=True, text=True, timeout=600,
                           cwd=tmp_path)
    assert quiet.returncode == 0 and "[hil]" not in quiet.stderr and "Method::execute" in quiet.stdout


def test_a_step_longer_than_the_delay_gets_a_bar_with_its_percentage():
    master, slave = pty.openpty()
    stream = os.fdopen(slave, "w")
    try:
        progress = Terminal(stream)
        progress.start("flash", "flash image.elf to bench")
        time.sleep(BAR_DELAY_S + 0.5)
        progress.advance(0.5)
        time.sleep(0.6)
        progress.finish("flash", BAR_DELAY_S + 1.1, ok=True)
        stream.flush()
        out = b""
        while select.select([master], [], [], 0.2)[0]:
            out += os.read(master, 65536)
    finally:
        stream.close()
        os.close(master)
    text = out.decode()
    assert text.startswith("[hil] flash image.elf to bench…")
    assert "\r  flash: " in text and " 50%|" in text  # the bar, redrawn in place, at pyOCD's fraction
    assert text.rstrip().endswith("[hil] flash: 3.10 s")


def test_pytest_v_shows_the_steps_of_each_test(tmp_path):
    (tmp_path / "test_one.py").write_text(textwrap.dedent(
        """
        def test_one(hil_profile):
            assert hil_profile("cifar10", delegate="none", iterations=1).profile["events"]
        """
    ))
    done = subprocess.run([sys.executable, "-m", "pytest", "-v", "-p", "no:cacheprovider", "--board", "qemu",
                           "--rootdir", str(tmp_path), "test_one.py"], cwd=tmp_path, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stdout[-3000:]
    for step in STEPS[1:]:
        assert f"    [hil] {step}" in done.stdout, step
    quiet = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--board", "qemu",
                            "--rootdir", str(tmp_path), "test_one.py"], cwd=tmp_path, capture_output=True, text=True,
                           timeout=600)
    assert quiet.returncode == 0 and "[hil]" not in quiet.stdout
    # Live logging: pytest draws the `hil` records itself (its own format, logger name shown), once each.
    live = subprocess.run([sys.executable, "-m", "pytest", "-v", "--log-cli-level=INFO", "-p", "no:cacheprovider",
                           "--board", "qemu", "--rootdir", str(tmp_path), "test_one.py"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=600)
    assert live.returncode == 0, live.stdout[-3000:]
    for step in STEPS[1:]:
        assert re.search(rf"^INFO +hil:.*{re.escape(step)}", live.stdout, re.M), step
    assert "    [hil] " not in live.stdout  # the plugin's own lines stay out of live logging's way
