"""`hil run` end to end on the QEMU board: a model it has never seen, and the ways a run can fail."""

from __future__ import annotations

import json
import os
import re
import shutil
import time
from pathlib import Path

import pytest

from hil.config.board_config import load_board_config
from hil.base.errors import TargetError
from hil.run.pipeline import RunRequest, run_profile

REPO = Path(__file__).resolve().parents[2]


def test_hil_run_profiles_a_user_model_it_has_never_seen(run_cli, tmp_path):
    model = tmp_path / "user_cnn.py"
    shutil.copyfile(REPO / "tests" / "fixtures" / "small_cnn.py", model)
    out = tmp_path / "run"
    done = run_cli("run", "--board", "qemu", "--model", f"{model}:factory", "--out", str(out), "--iterations", "3")
    assert done.returncode == 0, done.stderr
    profile = json.loads((out / "profile.json").read_text())
    assert profile["model"] and profile["iterations"] == 3
    assert "Method::execute" in done.stdout
    for name in ["model.pte", "etrecord.bin", "trace.etdump", "serial.log", "profile.json", "manifest.json", "trace.json"]:
        assert (out / name).is_file(), name
    trace = json.loads((out / "trace.json").read_text())  # Chrome trace format: slices of every event, 3 iterations
    slices = [e for e in trace["traceEvents"] if e["ph"] == "X"]
    assert len(slices) == 3 * len(profile["events"]) and all(e["dur"] >= 0 for e in slices)
    assert "trace.json" in json.loads((out / "manifest.json").read_text())["files"]


def test_hil_run_json_prints_what_profile_json_holds(run_cli, tmp_path):
    out = tmp_path / "run"
    done = run_cli("run", "--board", "qemu", "--model", "cifar10", "--delegate", "none", "--out", str(out),
                   "--iterations", "2", "--json", "-q")
    assert done.returncode == 0, done.stderr
    printed = json.loads(done.stdout)
    assert printed == {"artifacts": str(out), "profile": json.loads((out / "profile.json").read_text())}


def test_a_breakpoint_that_does_not_exist_fails_fast_and_names_it(run_cli, qemu_board_file, tmp_path):
    board = qemu_board_file(**{'breakpoint = "hil_etdump_ready"': 'breakpoint = "no_such_function"'})
    out = tmp_path / "run"
    start = time.monotonic()
    done = run_cli(
        "run", "--board-config", str(board), "--model", "cifar10", "--out", str(out),
        "--timeout", "30", "--iterations", "1", "--no-delegate",
    )
    assert done.returncode == 2  # refused from the image's symbol table (hil.target.elf_preflight), an input error
    assert time.monotonic() - start < 120
    message = done.stderr
    named = re.search(r"board 'qemu': firmware image (\S+\.elf) has no symbol 'no_such_function'", message)
    assert named and Path(named.group(1)).is_file(), message  # the image the board would run (runtime or replay)
    assert "Traceback" not in message
    assert not (out / "serial.log").exists() and (out / "manifest.json").is_file()  # QEMU never started
    assert json.loads((out / "manifest.json").read_text())["status"] == "failed"


def test_firmware_that_never_reaches_the_breakpoint_fails_within_the_timeout(tmp_path):
    board = load_board_config("qemu")
    request = RunRequest(
        model="cifar10", board=board, out_dir=tmp_path, iterations=1, timeout_s=20, delegate="none",
        image_options={"call_ready": False},
    )
    start = time.monotonic()
    with pytest.raises(TargetError) as failure:
        run_profile(request)
    assert time.monotonic() - start < 20 + 60  # the run's own timeout plus export and start-up
    message = str(failure.value)
    assert "hil_etdump_ready" in message and "qemu" in message
    assert str(tmp_path / "serial.log") in message
    assert "Inference time" in message or "Program complete" in message  # the console's last lines


@pytest.mark.parametrize("size", [0, 0x7FFFFFF0])
def test_an_impossible_result_size_is_refused(tmp_path, size):
    request = RunRequest(
        model="cifar10", board=load_board_config("qemu"), out_dir=tmp_path, iterations=1, timeout_s=30,
        delegate="none", image_options={"result_size_override": size},
    )
    with pytest.raises(TargetError, match="size"):
        run_profile(request)


def test_hil_export_writes_the_program_a_firmware_build_needs(run_cli, tmp_path):
    from hil.records.pte import read_program

    out = tmp_path / "export"
    spec = f"{REPO / 'tests' / 'fixtures' / 'small_cnn.py'}:factory"
    done = run_cli("export", "--model", spec, "--out", str(out))
    assert done.returncode == 0, done.stderr
    assert read_program(out / "model.pte").kernels and (out / "etrecord.bin").stat().st_size > 0
    refused = run_cli("export", "--model", spec, "--out", str(out), "--delegate", "no-such-backend")
    assert refused.returncode != 0 and "no-such-backend" in refused.stderr and "Traceback" not in refused.stderr


@pytest.mark.parametrize(("extra", "mirror", "says"), [
    (("--firmware", "runtime"), None, 'qemu.firmware = "runtime" (command line) asks for the runtime image, but there '
     "is no firmware source workspace at {missing} (RT700_SDK_DIR), so nothing runs; assemble it with `hil sources`"),
    # Issue 32: a mirror folder without the pinned repositories is the machine's fault, and nothing replays.
    ((), "empty-mirror", "HIL_GIT_BASE is set, so the runtime image is wanted, but the pinned firmware sources could "
     "not be had from {mirror}: pytorch/executorch: no repository at {mirror}/pytorch/executorch"),
    ((), "no-such-mirror", "HIL_GIT_BASE is set, so the runtime image is wanted, but git base {mirror} (HIL_GIT_BASE) "
     "is neither a URL nor a folder"),
])
def test_the_runtime_image_wanted_without_sources_is_an_environment_fault_that_replays_nothing(
        run_cli, tmp_path, extra, mirror, says):
    out, missing = tmp_path / "run", tmp_path / "no-sdk"
    base = tmp_path / mirror if mirror else None
    if mirror == "empty-mirror":
        base.mkdir()
    done = run_cli("run", "--board", "qemu", "--model", "cifar10", "--delegate", "none", "--iterations", "1", "-q",
                   "--out", str(out), *extra, env={"RT700_SDK_DIR": str(missing), "HIL_GIT_BASE": str(base or "")})
    assert done.returncode == 3, done.stderr
    first = done.stderr.splitlines()[0]
    assert first.startswith(f"hil run: board 'qemu': {says.format(missing=missing, mirror=base)}"), first
    assert "nothing ran" in first or "nothing runs" in first
    assert "make " not in done.stderr and "replays" not in done.stderr and "Traceback" not in done.stderr
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["status"] == "failed" and not (out / "serial.log").exists()  # nothing ran
    assert manifest["firmware_choice"]["setting"] == ("runtime" if extra else "auto")


@pytest.mark.skipif(not Path(os.environ.get("HIL_GIT_BASE") or "/nonexistent").is_dir(),
                    reason="HIL_GIT_BASE names no local mirror of the pinned sources (`make test` in CI)")
def test_hil_run_with_hil_git_base_assembles_the_sources_it_lacks_and_runs_the_firmware(run_cli, tmp_path):
    sources, out = tmp_path / "sources", tmp_path / "run"
    done = run_cli("run", "--board", "qemu", "--model", "cifar10", "--delegate", "none", "--iterations", "2",
                   "--out", str(out), "-v", env={"RT700_SDK_DIR": str(sources)}, timeout=2400)
    assert done.returncode == 0, done.stderr[-3000:]
    assert f"assemble the pinned firmware sources from {os.environ['HIL_GIT_BASE']} into {sources}" in done.stderr
    assert (sources / "workspace.env").is_file()
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["firmware_kind"] == "runtime" and "sources" in manifest["steps_s"], manifest.get("steps_s")


def test_a_run_that_requires_the_runtime_image_fails_without_sources_and_says_why(tmp_path, monkeypatch):
    """What the plugin does for a history whose series is a runtime series: one field of the request."""
    from hil.base.errors import EnvironmentFault
    from hil.firmware.qemu_firmware import Requirement

    monkeypatch.setenv("RT700_SDK_DIR", str(tmp_path / "no-sdk"))
    monkeypatch.delenv("HIL_GIT_BASE", raising=False)
    why = "the history's series of cifar10 on qemu is a runtime series"
    out = tmp_path / "run"
    with pytest.raises(EnvironmentFault, match=rf"the run requires the runtime image \({why}\), but there is no firmware source"):
        run_profile(RunRequest(model="cifar10", board=load_board_config("qemu"), out_dir=out, iterations=1,
                               delegate="none", required_firmware=Requirement("runtime", why)))
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["firmware_choice"] == {"setting": "auto", "from": f"board file {REPO / 'boards' / 'qemu.toml'}",
                                           "required": {"kind": "runtime", "reason": why}}
    assert manifest["error_kind"] == "EnvironmentFault" and not (out / "serial.log").exists()
