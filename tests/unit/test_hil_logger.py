"""Every line the harness says is a record of the `hil` logger: caplog, logging.config and pytest's
live logging can capture, filter or redirect it. Records carry no `[hil] ` prefix; the command line's
handler (hil.base.log.drawn_on) adds it."""

from __future__ import annotations

import io
import logging
import re
import subprocess
import sys
from pathlib import Path

import pytest

from hil.base import log
from hil.aot.neutron_sdk import sdk_available
from hil.config.board_config import load_board_config
from hil.run.request import RunRequest, choose_delegate
from hil.base.progress import Lines
from hil.run.folder import RunFolderLock
from hil.base.steps import StepTimer


def test_progress_steps_are_info_records_of_the_hil_logger(caplog):
    caplog.set_level(logging.INFO, logger="hil")
    timer = StepTimer(progress=Lines())
    with timer.step("aot", "export cifar10 (cached, delegate none)"):
        pass
    assert [(r.name, r.levelno) for r in caplog.records] == [("hil", logging.INFO)] * 2
    assert caplog.messages[0] == "export cifar10 (cached, delegate none)…"
    assert re.fullmatch(r"aot: \d+\.\d\d s", caplog.messages[1])


def test_a_wait_for_a_busy_run_folder_is_a_warning(caplog, tmp_path):
    holder = subprocess.Popen([sys.executable, "-c", (
        "import sys, time; from pathlib import Path; from hil.run.folder import RunFolderLock\n"
        f"with RunFolderLock(Path({str(tmp_path)!r})):\n    print('held', flush=True); time.sleep(1.5)")],
        stdout=subprocess.PIPE, text=True, cwd=Path(__file__).resolve().parents[2])
    try:
        assert holder.stdout.readline().strip() == "held"
        with RunFolderLock(tmp_path, wait=True, report=log.warning):
            pass
    finally:
        holder.wait(timeout=30)
    (record,) = [r for r in caplog.records if r.name == "hil"]
    assert record.levelno == logging.WARNING and f"pid {holder.pid}" in record.getMessage()
    assert not record.getMessage().startswith("[hil]")


@pytest.mark.skipif(sdk_available(), reason="the eIQ Neutron SDK is installed: no fallback to say")
def test_the_simulated_neutron_fallback_is_said_through_the_logger(caplog, tmp_path):
    board = load_board_config("qemu", None)
    request = RunRequest(model="cifar10", board=board, out_dir=tmp_path, delegate="auto")
    assert choose_delegate(request) == "neutron-sim"
    assert any(r.name == "hil" and "simulated Neutron backend" in r.getMessage() for r in caplog.records)


def test_the_command_line_draws_records_with_the_prefix_and_takes_its_handler_away():
    stream = io.StringIO()
    before = (list(log.LOG.handlers), log.LOG.level)
    with log.drawn_on(stream):
        Lines().start("flash", "flash image.elf to qemu")
        logging.getLogger("hil.probe.lock").warning("probe %s in use", "X")
    assert stream.getvalue().splitlines() == ["[hil] flash image.elf to qemu…", "[hil] probe X in use"]
    assert (log.LOG.handlers, log.LOG.level) == before
    Lines().start("again")
    assert "again" not in stream.getvalue()
