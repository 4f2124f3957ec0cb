"""The fault matrix, the numerics references: a model's code that misbehaves where the references are computed.

The eager and host-runtime references (hil.aot.references) are computed by the export for its example
inputs and kept in the cache entry; for an inputs file they are computed in a child of their own, with
the export's deadline, its output appended to export.log. Each row runs on a cache hit (`hil export`
first), as a user's second run does: before, the parent loaded the model itself there, so a fork left a
copy of hil running, `sys.exit(0)` ended the run with 0 and no profile, `os._exit(0)` left no manifest,
KeyboardInterrupt gave 130 and 100 MB of prints broke `--json`.

How the model misbehaves only there: its forward looks at the first input value (the inputs file's), and
not while torch.export traces it. The factory cannot tell a cache hit apart without changing the key:
what it reads (files, variables, path checks) is followed by the export cache (hil.aot.follow). The
factory appends a line to a file on each call, so a test counts how often the model's code ran.

Truths: the exit status and messages written out here, the processes read from /proc (orphans.py), the
model built here from its file (runpy) and ExecuTorch's own host runtime (executorch.runtime) run here.
"""

from __future__ import annotations

import json
import runpy
import textwrap
import time
from pathlib import Path

import pytest
import torch
from orphans import processes_tagged
from runtime_workspace import needs_runtime
from test_fault_matrix import RUN, first_line, hil, manifest  # noqa: F401  (hil: the fixture)

# The first input value that makes the forward do each thing (the example input is seeded randn).
TRIGGERS = {"forks": 1.0, "exits": 2.0, "ends the process": 3.0, "interrupts": 4.0, "prints": 5.0}
PRINTED = 100 << 20  # 100 MiB


def model_source(calls: Path) -> str:
    return textwrap.dedent(
        f"""
        import os
        import sys
        import time
        import torch

        class Moody(torch.nn.Module):
            def __init__(self):
                super().__init__()
                torch.manual_seed(23)
                self.fc = torch.nn.Linear(6, 4)

            def forward(self, x):
                if not torch.compiler.is_exporting():
                    first = float(x.flatten()[0])
                    if first == 1.0 and os.fork() == 0:
                        time.sleep(600)
                        os._exit(0)
                    if first == 2.0:
                        sys.exit(0)
                    if first == 3.0:
                        os._exit(0)
                    if first == 4.0:
                        raise KeyboardInterrupt
                    if first == 5.0:
                        line = "x" * ((1 << 20) - 1) + "\\n"
                        for _ in range({PRINTED >> 20}):
                            sys.stdout.write(line)
                return torch.relu(self.fc(x))

        def factory():
            with open({str(calls)!r}, "a") as log:
                log.write("factory\\n")
            return Moody().eval(), (torch.randn(1, 6),)
        """
    )


@pytest.fixture(scope="module")
def moody(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Path, Path]:
    """(spec, model file, the file each factory call appends to), exported once: every row is a cache hit."""
    from test_fault_matrix import Hil

    folder = tmp_path_factory.mktemp("moody")
    model, calls = folder / "moody.py", folder / "calls.txt"
    model.write_text(model_source(calls))
    spec = f"{model}:factory"
    done, _ = Hil()("export", "--model", spec, "--out", str(folder / "exported"))
    assert done.returncode == 0, done.stderr
    return spec, model, calls


def calls_of(calls: Path) -> int:
    return len(calls.read_text().splitlines()) if calls.exists() else 0


def inputs_file(folder: Path, first: float) -> Path:
    tensor = torch.full((1, 6), 0.5)
    tensor[0, 0] = first
    torch.save((tensor,), folder / "inputs.pt")
    return folder / "inputs.pt"


def run(hil, spec: str, out: Path, *extra: str):  # noqa: F811
    return hil(*RUN[:3], "--model", spec, "--delegate", "none", "--iterations", "1", "--out", str(out), *extra)


@needs_runtime
def test_a_warm_run_on_the_example_inputs_runs_none_of_the_models_code(hil, moody, tmp_path):  # noqa: F811
    from executorch.runtime import Runtime

    spec, model, calls = moody
    before = calls_of(calls)
    assert before == 1  # the export's child called the factory once
    out = tmp_path / "run"
    done, elapsed = run(hil, spec, out)
    assert done.returncode == 0 and elapsed < 300, done.stderr
    assert calls_of(calls) == before  # neither the factory nor the forward ran again: the references were stored
    assert not (out / "export.log").exists()  # no child started
    (target,) = torch.load(out / "outputs.pt", weights_only=True)
    module, inputs = runpy.run_path(str(model))["factory"]()  # the truths, built here
    with torch.no_grad():
        eager = module(*inputs)
    data = (out / "model.pte").read_bytes()
    (host,) = Runtime.get().load_program(data).load_method("forward").execute(list(inputs))
    section = json.loads((out / "profile.json").read_text())["numerics"]
    assert section["status"] == "computed"
    assert section["vs_eager"]["max_abs_error"] == pytest.approx(float((target - eager).abs().max()), abs=1e-12)
    assert section["vs_host_runtime"]["max_abs_error"] == pytest.approx(float((target - host).abs().max()), abs=1e-12)


@needs_runtime
@pytest.mark.parametrize(("behaviour", "says"), [
    ("exits", "raised SystemExit(0)"),
    ("ends the process", "ended without a result (exit status 0)"),
    ("interrupts", "raised KeyboardInterrupt"),
])
def test_a_model_that_exits_or_interrupts_on_the_users_inputs_is_the_models_fault(hil, moody, tmp_path,  # noqa: F811
                                                                                 behaviour, says):
    spec, model, calls = moody
    out = tmp_path / "run"
    done, elapsed = run(hil, spec, out, "--inputs", str(inputs_file(tmp_path, TRIGGERS[behaviour])))
    assert done.returncode == 2 and elapsed < 300, done.stderr  # never 0, never 130
    line = first_line(done)
    assert line.startswith(f"hil run: the numerics references of model '{spec}' ({model})") and says in line, line
    kept = manifest(out)
    assert kept["status"] == "failed" and says in kept["error"] and "profile.json" not in kept["files"]
    assert (out / "export.log").is_file()  # the child's log


@needs_runtime
def test_a_model_that_forks_on_the_users_inputs_leaves_nothing_running(hil, moody, tmp_path):  # noqa: F811
    spec, model, calls = moody
    out = tmp_path / "run"
    done, elapsed = run(hil, spec, out, "--inputs", str(inputs_file(tmp_path, TRIGGERS["forks"])))
    # The references came from the child that forked (its fork then ended with its process group): the run passes.
    assert done.returncode == 0 and elapsed < 60, done.stderr
    assert manifest(out)["numerics"]["status"] == "computed"
    deadline = time.monotonic() + 5
    while processes_tagged(hil.tag) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert processes_tagged(hil.tag) == []  # no copy of hil sleeping on


@needs_runtime
def test_a_model_printing_100_mb_leaves_hils_stdout_alone(hil, moody, tmp_path):  # noqa: F811
    spec, model, calls = moody
    out = tmp_path / "run"
    done, elapsed = run(hil, spec, out, "--json", "--inputs", str(inputs_file(tmp_path, TRIGGERS["prints"])))
    assert done.returncode == 0 and elapsed < 300, done.stderr
    assert len(done.stdout) < 1 << 20 and len(done.stderr) < 1 << 20
    assert json.loads(done.stdout)["profile"]["numerics"]["status"] == "computed"
    assert (out / "export.log").stat().st_size >= PRINTED  # the prints went to the log


def test_an_inputs_file_with_the_numerics_check_off_is_refused(hil, tmp_path):  # noqa: F811
    path, out = inputs_file(tmp_path, 0.5), tmp_path / "run"
    done, elapsed = hil(*RUN, "--iterations", "1", "--no-numerics", "--inputs", str(path), "--out", str(out))
    assert done.returncode == 2 and elapsed < 30, done.stderr
    assert first_line(done) == (
        f"hil run: --inputs {path} with --no-numerics: the inputs are written by the numerics check, so the file"
        " would be ignored (the image keeps its fill byte); drop one of the two (pytest: --hil-inputs with"
        " hil_profile(numerics=False))")
    kept = manifest(out)
    assert kept["status"] == "failed" and kept["error_kind"] == "input"
