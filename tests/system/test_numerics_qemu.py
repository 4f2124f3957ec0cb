"""The numerics check on the QEMU runtime board: real inputs in, the target's outputs out, against truths computed here.

The target's outputs (outputs.pt of the run folder, read through GDB) are compared in this file with
the eager model built from hil.aot.cifarnet's seed and with ExecuTorch's own runtime
(`executorch.runtime`) on the same .pte and inputs: neither is what the harness computed. A budget
on the SNR is asserted through `pytest --board qemu` in a session of its own, and inputs that do not
fit the program are refused before anything is built or flashed.

Needs the pinned source workspace (RT700_SDK_DIR), as tests/system/test_qemu_runtime.py does.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch

REPO = Path(__file__).resolve().parents[2]
HIL = [sys.executable, "-m", "hil.cli.main"]
from runtime_workspace import SDK_DIR, needs_runtime  # noqa: E402,F401
# Measured (README "Numerics"): the image's portable kernels (arm-none-eabi-gcc -O2, Cortex-M33 FPU) and the
# host runtime's differ by at most 1.5e-8 on cifar10's softmax outputs (about 0.1 each): float32 rounding.
HOST_RUNTIME_ATOL = 1e-6


def hil_run(out: Path, *extra: str, timeout: float = 900) -> subprocess.CompletedProcess:
    return subprocess.run([*HIL, "run", "--board", "qemu", "--model", "cifar10", "--delegate", "none",
                           "--iterations", "2", "--out", str(out), *extra],
                          cwd=REPO, capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="module")
def cifar10_run(tmp_path_factory) -> tuple[Path, str]:
    out = tmp_path_factory.mktemp("numerics") / "run"
    done = hil_run(out)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return out, done.stdout


@needs_runtime
def test_cifar10_outputs_match_eager_and_the_host_runtime(cifar10_run) -> None:
    from executorch.runtime import Runtime

    from hil.aot import cifarnet
    from hil.aot.models import BUILTIN_SEED

    out, stdout = cifar10_run
    line = next(line for line in stdout.splitlines() if line.startswith("numerics:"))
    assert "vs eager SNR" in line and "vs host runtime" in line and "top-1 100%" in line, line
    (target,) = torch.load(out / "outputs.pt", weights_only=True)
    model, inputs = cifarnet.build(BUILTIN_SEED)
    with torch.no_grad():
        eager = model.eval()(*inputs)
    pte = (out / "model.pte").read_bytes()
    (host,) = Runtime.get().load_program(pte).load_method("forward").execute(list(inputs))
    assert target.shape == eager.shape == (1, 10)
    torch.testing.assert_close(target, eager, rtol=0, atol=1e-6)  # the inputs really reached the target
    torch.testing.assert_close(target, host, rtol=0, atol=HOST_RUNTIME_ATOL)
    assert int(target.argmax()) == int(eager.argmax())
    # The fill byte's outputs are another answer: a run on zeros would not pass the checks above.
    with torch.no_grad():
        zeros = model(torch.zeros_like(inputs[0]))
    assert float((zeros - eager).abs().max()) > 1e-3
    section = json.loads((out / "profile.json").read_text())["numerics"]
    assert section["status"] == "computed"
    assert section["vs_eager"]["max_abs_error"] == pytest.approx(float((target - eager).abs().max()), abs=1e-12)
    assert "Inputs: 1 tensor(s) set by the debugger" in (out / "serial.log").read_text(errors="replace")


@needs_runtime
def test_an_snr_budget_is_asserted_by_pytest_and_fails_with_the_numbers(tmp_path, cifar10_run) -> None:
    (tmp_path / "test_budget.py").write_text(textwrap.dedent("""
        import pytest

        @pytest.mark.hil_budget(snr_db_min=60)
        def test_meets(hil_profile):
            hil_profile("cifar10", delegate="none", iterations=2)

        @pytest.mark.hil_budget(snr_db_min=200, max_abs_error=1e-12)
        def test_too_strict(hil_profile):
            hil_profile("cifar10", delegate="none", iterations=2)
    """))
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--board", "qemu",
                           "--rootdir", str(tmp_path), "--hil-artifacts", str(tmp_path / "artifacts"), "-q",
                           "test_budget.py"], cwd=tmp_path, capture_output=True, text=True, timeout=1200,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    text = done.stdout + done.stderr
    assert done.returncode == 1, text[-4000:]
    assert "1 failed, 1 passed" in text, text[-4000:]
    assert "output SNR vs eager PyTorch (min): measured 1" in text and "limit (min) 200 dB" in text, text[-4000:]
    assert "output max abs error vs eager PyTorch: measured" in text and "limit (max) 1e-12" in text, text[-4000:]


def test_inputs_of_the_wrong_shape_or_dtype_are_refused_before_flashing(tmp_path) -> None:
    torch.save((torch.zeros(1, 3, 16, 16),), tmp_path / "small.pt")
    done = hil_run(tmp_path / "run-pt", "--inputs", str(tmp_path / "small.pt"), timeout=600)
    assert done.returncode == 2, done.stdout[-2000:] + done.stderr[-2000:]
    assert "input 0 is float32 [1, 3, 16, 16], but the program's input 0 is float32 [1, 3, 32, 32]" in done.stderr
    assert not (tmp_path / "run-pt" / "serial.log").exists()  # no board was started
    import numpy as np

    np.savez(tmp_path / "ints.npz", image=np.zeros((1, 3, 32, 32), dtype=np.int64))
    done = hil_run(tmp_path / "run-npz", "--inputs", str(tmp_path / "ints.npz"), timeout=600)
    assert done.returncode == 2, done.stderr[-2000:]
    assert "image is int64 [1, 3, 32, 32], but the program's input 0 is float32 [1, 3, 32, 32]" in done.stderr


@needs_runtime
def test_a_users_inputs_file_is_what_the_target_computes_on(tmp_path) -> None:
    from hil.aot import cifarnet
    from hil.aot.models import BUILTIN_SEED

    ones = torch.full((1, 3, 32, 32), 0.5)
    torch.save((ones,), tmp_path / "half.pt")
    done = hil_run(tmp_path / "run", "--inputs", str(tmp_path / "half.pt"))
    assert done.returncode == 0, done.stderr[-3000:]
    (target,) = torch.load(tmp_path / "run" / "outputs.pt", weights_only=True)
    model, _ = cifarnet.build(BUILTIN_SEED)
    with torch.no_grad():
        torch.testing.assert_close(target, model.eval()(ones), rtol=0, atol=1e-6)
    section = json.loads((tmp_path / "run" / "profile.json").read_text())["numerics"]
    assert section["inputs"]["source"] == f"file {tmp_path / 'half.pt'}"


def test_the_replay_image_says_it_computes_no_outputs(tmp_path) -> None:
    board = tmp_path / "qemu.toml"
    text = (REPO / "boards" / "qemu.toml").read_text()
    board.write_text(text.replace('firmware = "auto"', 'firmware = "replay"'))
    done = subprocess.run([*HIL, "run", "--board-config", str(board), "--model", "cifar10", "--delegate", "none",
                           "--iterations", "2", "--out", str(tmp_path / "run")],
                          cwd=REPO, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "numerics: outputs not computed (replay image)" in done.stdout
    assert not (tmp_path / "run" / "outputs.pt").exists()


def errors(done: subprocess.CompletedProcess) -> list[str]:
    """stderr without the step lines (`[hil] export cifar10...`): what the user is told went wrong."""
    assert "Traceback" not in done.stderr, done.stderr
    return [line for line in done.stderr.splitlines() if not line.startswith("[hil]")]


def nonfinite_inputs(path: Path) -> Path:
    """cifar10's input with 3 NaN and 2 infinities planted by hand (5 non-finite values of 3072)."""
    image = torch.full((1, 3, 32, 32), 0.25)
    image[0, 0, 0, :3] = torch.nan
    image[0, 1, 5, 7] = torch.inf
    image[0, 2, 31, 31] = -torch.inf
    torch.save((image,), path)
    return path


def test_nonfinite_inputs_are_refused_before_any_image_is_built(tmp_path) -> None:
    path = nonfinite_inputs(tmp_path / "nan.pt")
    done = hil_run(tmp_path / "run", "--inputs", str(path), timeout=600)
    assert done.returncode == 2, done.stdout[-2000:] + done.stderr[-2000:]
    assert errors(done) == [
        f"hil run: file {path}: input 0 holds 5 non-finite value(s) of 3072 (3 NaN, 2 infinite); refused before any "
        "image is built (--allow-nonfinite-inputs or pytest --hil-allow-nonfinite-inputs lets them through)"]
    assert not (tmp_path / "run" / "serial.log").exists() and not (tmp_path / "run" / "firmware.elf").exists()


@needs_runtime
def test_allowed_nonfinite_inputs_run_and_the_numerics_say_outputs_not_finite(tmp_path) -> None:
    path = nonfinite_inputs(tmp_path / "nan.pt")
    done = hil_run(tmp_path / "run", "--inputs", str(path), "--allow-nonfinite-inputs")
    assert done.returncode == 0, done.stderr[-3000:]
    (target,) = torch.load(tmp_path / "run" / "outputs.pt", weights_only=True)
    nan = int(torch.isnan(target).sum())  # counted here from the target's own outputs: NaN spreads through the convs
    assert nan == target.numel() == 10
    line = next(line for line in done.stdout.splitlines() if line.startswith("numerics:"))
    assert line == "numerics: outputs not finite (output 0: 10 NaN, 0 infinite)" and "top-1" not in done.stdout
    section = json.loads((tmp_path / "run" / "profile.json").read_text())["numerics"]
    assert section["vs_eager"]["snr_db"] is None and section["vs_eager"]["bit_exact"] is False
    assert "top1_agreement" not in section["vs_eager"]


@pytest.mark.parametrize("content", [bytes(range(256)) * 4, b"", b"image = [0.5] * 3072\n"])
def test_an_unreadable_inputs_file_is_one_line(tmp_path, content) -> None:
    path = tmp_path / "inputs.pt"
    path.write_bytes(content)
    done = hil_run(tmp_path / "run", "--inputs", str(path), timeout=600)
    assert done.returncode == 2, done.stderr[-2000:]
    (line,) = errors(done)  # torch's six lines of advice used to follow
    assert line.startswith(f"hil run: inputs file {path} cannot be read: "), done.stderr
    assert "weights_only" not in done.stderr
