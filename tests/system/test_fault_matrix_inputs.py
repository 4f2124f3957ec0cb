"""The fault matrix, what a user feeds a run: inputs holding NaN or infinity, inputs files that cannot be read,
budget limits that no run can be judged against. Each row runs `hil run` (or `pytest`) as a user does.

Every row asserts what the rows of test_fault_matrix.py do: the exit status (2 for a `hil run` input, pytest's
usage error 4 for a budget, as for a bad `--hil-*` option), the one line naming the file, tensor or key, a
generous time bound, what the run folder keeps (manifest.json: failed, error_kind "input"; no image started)
and that no process is left behind (the `hil` fixture). The truths are planted by hand and counted in the comments.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
from orphans import processes_tagged
from runtime_workspace import needs_runtime
from test_fault_matrix import REPO, RUN, Hil, first_line, hil, manifest  # noqa: F401  (hil: the fixture)


def planted(path: Path) -> Path:
    """cifar10's input, 0.5 everywhere but 2 NaN and 1 infinity: 3 non-finite values of 3 * 32 * 32 = 3072."""
    image = torch.full((1, 3, 32, 32), 0.5)
    image[0, 0, 0, 0] = image[0, 1, 2, 3] = torch.nan
    image[0, 2, 31, 31] = torch.inf
    torch.save(image, path)
    return path


def refused(done: subprocess.CompletedProcess, out: Path) -> str:
    """The one line of a refused input (after the step lines), with the manifest that says so; no image started."""
    assert done.returncode == 2, done.stderr
    lines = [line for line in done.stderr.splitlines() if not line.startswith("[hil]")]
    assert len(lines) == 1, done.stderr  # no torch or executorch text beside it
    kept = manifest(out)
    assert kept["status"] == "failed" and kept["error_kind"] == "input" and kept["error"] == lines[0][len("hil run: "):]
    assert not (out / "qemu.log").exists() and not (out / "serial.log").exists()
    return first_line(done)


def test_inputs_holding_nan_or_infinity_are_refused_naming_the_tensor_and_the_count(hil, tmp_path):
    path, out = planted(tmp_path / "nan.pt"), tmp_path / "run"
    done, elapsed = hil(*RUN, "--iterations", "1", "--inputs", str(path), "--out", str(out))
    assert refused(done, out) == (
        f"hil run: file {path}: input 0 holds 3 non-finite value(s) of 3072 (2 NaN, 1 infinite); refused before any"
        " image is built (--allow-nonfinite-inputs or pytest --hil-allow-nonfinite-inputs lets them through)")
    assert elapsed < 120


@needs_runtime
def test_allowed_nonfinite_inputs_say_outputs_not_finite_never_top1_100_percent(hil, tmp_path):
    path, out = planted(tmp_path / "nan.pt"), tmp_path / "run"
    done, elapsed = hil(*RUN, "--iterations", "1", "--inputs", str(path), "--allow-nonfinite-inputs", "--out", str(out))
    assert done.returncode == 0 and elapsed < 300, done.stderr
    # cifar10's 10 class scores, each NaN: the NaN spreads through the first convolution into every output
    assert "numerics: outputs not finite (output 0: 10 NaN, 0 infinite)" in done.stdout.splitlines()
    assert "top-1" not in done.stdout
    assert manifest(out)["numerics"]["non_finite_outputs"] == [
        {"index": 0, "dtype": "float32", "shape": [1, 10], "nan": 10, "inf": 0}]


def _write(path: Path, content: bytes | None) -> Path:
    if content is None:
        path.mkdir()
    else:
        path.write_bytes(content)
    return path


# Refused before torch's import: the file's name, kind and first bytes are enough.
@pytest.mark.parametrize(("name", "content", "says"), [
    ("inputs.npz", b"image = [0.5] * 3072\n",
     "is not a .npz (a zip of .npy arrays, numpy.savez): it starts with b'imag'"),  # numpy said "pickled data"
    ("inputs.npz", b"", "is not a .npz (a zip of .npy arrays, numpy.savez): an empty file"),
    ("inputs.pt", None, "is a folder, not a file"),
    ("inputs.txt", b"0.5\n", "is not .pt or .npz"),
    ("missing.pt", "absent", "does not exist"),
])
def test_an_inputs_file_that_cannot_be_one_is_refused_before_the_import(hil, tmp_path, name, content, says):
    path, out = tmp_path / name, tmp_path / "run"
    if content != "absent":
        _write(path, content)
    done, elapsed = hil(*RUN, "--iterations", "1", "--inputs", str(path), "--out", str(out))
    assert refused(done, out) == f"hil run: inputs file {path} {says}"
    assert elapsed < 30 and not (out / "model.pte").exists()  # before the frameworks' import and the export
    assert "import" not in manifest(out)["steps_s"]


@pytest.mark.parametrize(("content", "says"), [
    (bytes(range(256)) * 4, "UnpicklingError: WeightsUnpickler error: Unsupported operand 0"),  # byte 0: no opcode
    (b"", "EOFError: no detail (an empty or cut-off file?)"),
    (b"PK\x03\x04" + bytes(26), "RuntimeError: "),  # a zip's header and nothing after it: torch's reader's words
])
def test_an_unreadable_pt_is_one_line_without_torchs_text(hil, tmp_path, content, says):
    path, out = tmp_path / "inputs.pt", tmp_path / "run"
    path.write_bytes(content)
    done, elapsed = hil(*RUN, "--iterations", "1", "--inputs", str(path), "--out", str(out))
    assert refused(done, out).startswith(f"hil run: inputs file {path} cannot be read: {says}")
    assert elapsed < 120 and "weights_only" not in done.stderr  # torch's advice (six lines) is not repeated


@pytest.mark.parametrize(("marker", "budget_file", "says"), [
    ("total_us=-1", "", "budget from @hil_budget on test_x.py::test_x: total_us must be >= 0 (a duration or size),"
                        " got -1"),
    ("snr_db_min=float('nan')", "", "budget from @hil_budget on test_x.py::test_x: snr_db_min must be a finite number,"
                                    " got nan"),
    ("", "[cifar10]\nmemory_bytes = -4096\n", "budget from {budgets} [cifar10]: memory_bytes must be >= 0 (a duration"
                                             " or size), got -4096"),
    ("", "[cifar10]\nmax_abs_error = inf\n", "budget from {budgets} [cifar10]: max_abs_error must be a finite number,"
                                            " got inf"),
])
def test_a_budget_no_run_can_be_judged_against_is_refused_before_any_test_runs(tmp_path, marker, budget_file, says):
    runner = Hil()
    mark = f"@pytest.mark.hil_budget({marker})\n" if marker else ""
    (tmp_path / "test_x.py").write_text(f"import pytest\n\n{mark}def test_x():\n    open('ran', 'w').close()\n")
    budgets = tmp_path / "budgets.toml"
    budgets.write_text(budget_file or "[cifar10]\ntotal_us = 900\n")
    start = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "test_x.py", "--board", "qemu",
                           "--hil-budgets", str(budgets)], cwd=tmp_path, capture_output=True, text=True, timeout=300,
                          env={**runner.env, "PYTHONPATH": os.pathsep.join([str(REPO), runner.env["PYTHONPATH"]])})
    elapsed = time.monotonic() - start
    assert done.returncode == 4 and elapsed < 60, done.stdout + done.stderr  # pytest's usage error, not a failed test
    assert [line for line in done.stderr.splitlines() if line] == [f"ERROR: {says.format(budgets=budgets)}"]
    assert not (tmp_path / "ran").exists() and processes_tagged(runner.tag) == []
    assert "Traceback" not in done.stdout + done.stderr
