"""The `hil_board` fixture with an image the harness did not build for the run: flash, configure,
run to the breakpoint, read the ETDump, profile it, read the console.

The QEMU replay image stands in for "an image the user built": it is built here, outside any
harness run, from a simulated buffer whose bytes and ground truth the test keeps. What the
fixture reads back is checked against those, not against anything the fixture computed.
"""

from __future__ import annotations

import json

import pytest

from hil.aot.export import export_model
from hil.replay.simulated import simulated_buffer
from hil.base.errors import TargetError
from hil.firmware.qemu_image import build_qemu_image

RUNS = 3


@pytest.fixture(scope="module")
def user_image():
    compiled = export_model("cifar10", delegate="neutron-sim", options={"quantize": True})  # the NPU runs int8 only
    buffer = simulated_buffer(compiled, iterations=RUNS, clock_mhz=324, seed=3, jitter=0.0)
    return compiled, buffer, build_qemu_image(buffer.etdump, buffer.console_lines, runs=RUNS)


def test_flash_configure_run_read_and_profile_a_user_image(hil_board, user_image, hil_board_config):
    if hil_board_config.kind != "qemu":
        pytest.skip("the replay image runs on the QEMU board only")
    compiled, buffer, elf = user_image
    hil_board.flash(elf)
    with pytest.raises(TargetError, match=r"call configure\(iterations, warmup\)"):
        hil_board.run_to("hil_etdump_ready")  # this image waits for its run configuration
    hil_board.configure(iterations=RUNS)
    hil_board.run_to("hil_etdump_ready")
    assert hil_board.read_etdump("hil_etdump_result") == buffer.etdump  # the bytes the image carried
    profile = hil_board.profile(compiled.etrecord_path, model="cifar10", pte=compiled.pte_path)
    assert profile["iterations"] == RUNS
    kernels = [e for e in profile["events"] if e["kind"] == "npu_kernel"]
    assert kernels and profile["npu_fraction"] > 0
    truth = buffer.simulation["method_execute_ticks"]
    method = next(e for e in profile["events"] if e["kind"] == "method")
    assert method["times_us"] == pytest.approx([ticks / 324 for ticks in truth], rel=1e-6)
    assert hil_board.console.expect(r"Inference time: \d+ us", timeout=5)
    written = json.loads((hil_board.workdir / "profile.json").read_text())
    assert written["totals_us"] == profile["totals_us"] and (hil_board.workdir / "manifest.json").is_file()


def test_before_flash_every_step_says_so(hil_board):
    with pytest.raises(TargetError, match=r"call flash\(elf\) first"):
        hil_board.run_to()


def test_the_consoles_default_timeout_comes_from_the_board_file(user_image, hil_board_config, tmp_path):
    if hil_board_config.kind != "qemu":
        pytest.skip("the replay image runs on the QEMU board only")
    from hil.run.board_session import BoardSession

    session = BoardSession(hil_board_config.with_overrides({"serial.expect_timeout_s": 7.5}), tmp_path)
    try:
        session.flash(user_image[2])
        assert session.console.default_timeout == 7.5
        with pytest.raises(TargetError, match=r"not seen within 0\.2 s") as caught:
            session.console.expect_exact("no such line", timeout=0.2)
        assert f"(log {tmp_path / 'serial.log'})" in str(caught.value)
    finally:
        session.close()
