"""et-hil as a user gets it: a wheel, installed into a fresh environment, used from a folder of its own.

The wheel is built from a copy of the repository's tracked files (`pip wheel --no-deps
--no-build-isolation`: offline, a second or two). The fresh environment is a venv without pip
whose site-packages holds one `.pth` line naming this interpreter's site-packages: the pinned heavy
dependencies (torch, executorch) are reused, not reinstalled. A plain path line in a `.pth` does
not run the other `.pth` files of that folder, so the checkout's editable install stays invisible
there; the test checks `hil` is imported from the new venv.

The user's project brings its own pins of dependencies it shares with et-hil (USER_PINS: another
pytest than constraints.txt's, another hypothesis than the one et-hil used to pin), installed into
the new venv first from the index pip is configured with (two small wheels); et-hil's wheel goes in
beside them and `pip check` finds every requirement met. From an unrelated folder it then runs `hil
run --board qemu` and the user project's `pytest --board qemu`, written the way the README shows,
under the user's pytest.

The wheel's venv also builds a QEMU runtime image after the checkout built one: one runtime build
serves every install on the machine (issue 29), read from the second build's own Ninja log.

A wheel user's first day (issue 28): from a lab mirror (HIL_GIT_BASE) and a sources folder of the
test's own, `hil doctor` names the missing sources, the project's `pytest --board qemu` assembles
them and runs the runtime image, and the doctor then passes: `hil` commands alone. The runtime build
cache (HIL_CACHE_DIR, keyed by content) is the suite's, so a warm machine builds only the image.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
import zipfile
from email.parser import Parser
from pathlib import Path

import pytest
from packaging.requirements import Requirement

from installed_wheel import DATA_FOLDERS, USER_PINS, clean_env as _clean_env, tracked_files as _tracked_files
from installed_wheel import venv, wheel  # noqa: F401  (the fixtures)
from runtime_workspace import SDK_DIR, needs_runtime
from tiny_models import linear_relu_source

REPO = Path(__file__).resolve().parents[2]

USER_TESTS = textwrap.dedent(
    """
    import pytest

    def test_cifar10_is_fast_enough(hil_profile, caplog):
        run = hil_profile("cifar10", delegate="none")
        # Emulated instructions on the QEMU runtime image (1 us = 250), host nanoseconds on the replay image.
        assert run.profile["totals_us"]["method_execute"] < 5_000_000
        assert run.profile["iterations"] == 2  # the project's ini file: hil_iterations = "2"
        steps = [r.getMessage() for r in caplog.records if r.name == "hil"]
        assert any(m.startswith("export cifar10") for m in steps) and any(m.startswith("analyse") for m in steps)

    @pytest.mark.hil_requires("npu")
    def test_needs_a_real_npu(hil_profile):
        raise AssertionError("the QEMU board declares no NPU: this test must be skipped")

    @pytest.mark.hil_budget(total_us=5_000_000)
    def test_my_model_within_budget(hil_profile):
        run = hil_profile("my_model.py:factory", iterations=2)
        assert run.profile["model"] == "my_model"

    def test_my_own_image_on_the_board(hil_board):
        from hil.aot.export import export_model
        from hil.replay.simulated import simulated_buffer
        from hil.firmware.qemu_image import build_qemu_image

        compiled = export_model("cifar10", delegate="neutron-sim", options={"quantize": True})
        buffer = simulated_buffer(compiled, iterations=2, clock_mhz=324)
        elf = build_qemu_image(buffer.etdump, buffer.console_lines, runs=2)  # stands in for the user's build
        hil_board.flash(elf)
        hil_board.configure(iterations=2)
        hil_board.run_to("hil_etdump_ready")
        hil_board.read_etdump("hil_etdump_result")
        assert hil_board.profile(compiled.etrecord_path)["npu_fraction"] > 0
        hil_board.console.expect(r"Inference time: \d+ us", timeout=5)

    def test_the_board_file_came_from_the_package(hil_board_config):
        assert hil_board_config.name == "qemu" and hil_board_config.clock_mhz > 0
        assert "site-packages" in str(hil_board_config.source)
    """
)

USER_INI = '[tool.pytest.ini_options]\nhil_iterations = "2"\n'
USER_MODEL = linear_relu_source(inputs=16, outputs=4, name="Small")


def test_the_wheel_carries_every_board_budget_and_firmware_file(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    expected = {f"hil/data/{name}" for name in _tracked_files() if name.split("/")[0] in DATA_FOLDERS}
    assert expected and expected <= names, sorted(expected - names)
    assert not [n for n in names if "/build/" in n or n.endswith((".o", ".elf"))]


def test_the_wheel_metadata_states_licence_python_classifiers_and_changelog(wheel):
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        (meta_name,) = [n for n in names if n.endswith(".dist-info/METADATA")]
        meta = Parser().parsestr(archive.read(meta_name).decode())
        licence = [n for n in names if n.endswith(".dist-info/licenses/LICENSE")]
        assert licence and archive.read(licence[0]) == (REPO / "LICENSE").read_bytes()
    assert "hil/py.typed" in names
    assert meta["License-Expression"] == "BSD-3-Clause"
    assert meta["Requires-Python"] == ">=3.11"
    classifiers = meta.get_all("Classifier")
    assert {"Programming Language :: Python :: 3.11", "Framework :: Pytest", "Typing :: Typed"} <= set(classifiers)
    assert "# Changelog" in meta.get_payload()
    runtime = [Requirement(r) for r in meta.get_all("Requires-Dist") if "extra ==" not in r]
    assert {r.name for r in runtime}.isdisjoint({"hypothesis", "pytest-xdist", "mutmut"}), runtime


def test_the_wheel_installs_beside_the_users_own_pins(venv):
    python = str(venv / "bin" / "python")
    done = subprocess.run([python, "-m", "pip", "check"], capture_output=True, text=True, timeout=120, env=_clean_env())
    assert done.returncode == 0, done.stdout + done.stderr
    versions = subprocess.run([python, "-c", "import pytest, hypothesis; print(pytest.__version__, hypothesis.__version__)"],
                              capture_output=True, text=True, timeout=60, env=_clean_env())
    assert versions.stdout.split() == [pin.split("==")[1] for pin in USER_PINS], versions.stdout + versions.stderr


def test_hil_run_from_an_unrelated_folder(venv, tmp_path):
    where = subprocess.run([str(venv / "bin" / "python"), "-c", "import hil; print(hil.__file__)"],
                           cwd=tmp_path, capture_output=True, text=True, timeout=60, env=_clean_env())
    assert where.stdout.startswith(str(venv)), where.stdout + where.stderr  # the wheel, not the checkout
    out = tmp_path / "run"
    done = subprocess.run([str(venv / "bin" / "hil"), "run", "--board", "qemu", "--model", "cifar10", "--out", str(out),
                           "--iterations", "2"], cwd=tmp_path, capture_output=True, text=True, timeout=900,
                          env=_clean_env())
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "Method::execute" in done.stdout
    for name in ("model.pte", "trace.etdump", "serial.log", "profile.json", "manifest.json"):
        assert (out / name).is_file(), name


def test_a_user_project_runs_its_own_tests_with_the_fixtures(venv, tmp_path):
    project = tmp_path / "my-project"
    (project / "tests").mkdir(parents=True)
    (project / "tests" / "test_perf.py").write_text(USER_TESTS)
    (project / "my_model.py").write_text(USER_MODEL)
    (project / "pyproject.toml").write_text(USER_INI)
    done = subprocess.run([str(venv / "bin" / "python"), "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", "--board",
                           "qemu", "tests"], cwd=project, capture_output=True, text=True, timeout=900,
                          env=_clean_env())
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "4 passed, 1 skipped" in done.stdout and "lacks npu" in done.stdout
    assert list((project / "hil-artifacts").glob("*/*/profile.json"))


def test_the_rt700_firmware_sources_come_out_of_the_package(venv, tmp_path):
    out = tmp_path / "fw"
    done = subprocess.run([str(venv / "bin" / "hil"), "firmware-sources", "--out", str(out)], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120, env=_clean_env())
    assert done.returncode == 0, done.stderr
    for name in _tracked_files():
        parts = name.split("/")
        if parts[0] == "firmware" and parts[1] in ("rt700", "common"):
            copied = out.joinpath(*parts[1:])
            assert copied.read_bytes() == (REPO / name).read_bytes(), name


# Ninja's line for an object it compiles, e.g. "[12/98] Building CXX object executorch/CMakeFiles/executorch_core.dir/...";
# ExternalProject flatcc_ep's make prints "[ 33%] Building C object src/compiler/...".
_NINJA_OBJECT = re.compile(r"^\[\d+/\d+\] Building \w+ object (\S+)$", re.MULTILINE)
_MAKE_OBJECT = re.compile(r"^\[ *\d+%\] Building \w+ object ", re.MULTILINE)
_SECOND_INSTALL_BUILD = textwrap.dedent("""
    import sys
    from pathlib import Path
    from hil.firmware import runtime_image
    from hil.firmware.runtime_image import RuntimeSources, build_runtime_image
    pte, workspace, flatc = map(Path, sys.argv[1:4])
    print(runtime_image.__file__)
    print(build_runtime_image(pte, RuntimeSources.from_workspace(workspace), flatc=flatc,
                              options={"HIL_SIM_NPU_CLOCK_MHZ": "251"}))
    """)


@needs_runtime
def test_a_second_install_builds_no_runtime_object(venv, tmp_path):
    """The checkout builds (or finds) a runtime image; the wheel's venv, with a flatc of the same bytes at another
    path, rebuilds that image (removed in between) from the same runtime folder compiling no ExecuTorch object."""
    from hil.aot.export import export_model
    from hil.firmware.runtime_image import RuntimeSources, build_runtime_image, wheel_flatc

    pte = export_model("cifar10", delegate="none").pte_path
    # 251 MHz: an image key no other test asks for, so removing its image disturbs no one.
    first = build_runtime_image(pte, RuntimeSources.from_workspace(Path(SDK_DIR)), flatc=wheel_flatc(),
                                options={"HIL_SIM_NPU_CLOCK_MHZ": "251"})
    shutil.rmtree(first.parent)
    flatc = tmp_path / "other-venv" / "flatc"
    flatc.parent.mkdir()
    shutil.copy2(wheel_flatc(), flatc)
    done = subprocess.run([str(venv / "bin" / "python"), "-c", _SECOND_INSTALL_BUILD, str(pte), SDK_DIR, str(flatc)],
                          cwd=tmp_path, capture_output=True, text=True, timeout=900, env=_clean_env())
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    module, elf = done.stdout.split()
    assert module.startswith(str(venv)), module  # the wheel's hil, not the checkout's
    assert Path(elf) == first and first.is_file()  # the same runtime folder, the same image key
    root = first.parents[2]
    log = (root / "images" / f"{first.parent.name}.build.log").read_text()
    objects = _NINJA_OBJECT.findall(log)
    assert [o for o in objects if o.startswith("CMakeFiles/hil_qemu_runtime.dir/")], log[-2000:]  # it did build
    assert not [o for o in objects if o.startswith("executorch/")] and not _MAKE_OBJECT.search(log), log[-4000:]
    # Nothing in the build folder points into either install: the second venv's flatc may go.
    cache = (root / "build" / "CMakeCache.txt").read_text()
    assert f"FLATC_EXECUTABLE:UNINITIALIZED={root}/tools/flatc\n" in cache
    assert f"CMAKE_HOME_DIRECTORY:INTERNAL={root}/src/firmware/qemu/runtime\n" in cache
    # The suite's cache lies inside the checkout (conftest.py): the checkout's paths other than the cache's are none.
    assert [line for line in cache.splitlines() if str(REPO) in line.replace(str(root), "")] == []
    assert str(flatc) not in cache
    # The code generators run with the install that asked last, not with the one that configured first.
    assert f"HIL_PYTHON:FILEPATH={venv}/bin/python\n" in cache and f"PYTHON_EXECUTABLE:UNINITIALIZED={venv}/bin/python\n" in cache


MIRROR = os.environ.get("HIL_GIT_BASE", "")
needs_mirror = pytest.mark.skipif(not MIRROR or not Path(MIRROR).is_dir(),
                                  reason="HIL_GIT_BASE names no local mirror of the pinned sources (`make test` in CI)")
RUNTIME_TESTS = textwrap.dedent(
    """
    def test_cifar10_runs_on_the_firmware(hil_profile):
        run = hil_profile("cifar10", delegate="none")
        assert run.profile["iterations"] == 2 and run.profile["totals_us"]["method_execute"] > 0
    """
)


def _hil(venv: Path, *args: str, cwd: Path, env: dict[str, str], timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([str(venv / "bin" / "hil"), *args], cwd=cwd, capture_output=True, text=True,
                          timeout=timeout, env=env)


@needs_mirror
def test_hil_sources_from_the_wheel_assembles_the_pins_or_names_what_is_missing(venv, tmp_path):
    import tomllib

    env = _clean_env(HIL_GIT_BASE=MIRROR, RT700_SDK_DIR=str(tmp_path / "sources"))
    done = _hil(venv, "sources", cwd=tmp_path, env=env, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"workspace {tmp_path / 'sources'} is ready" in done.stdout
    for pin in tomllib.loads((REPO / "firmware" / "rt700" / "pins.toml").read_text())["pin"]:
        head = subprocess.run(["git", "-C", str(tmp_path / "sources" / pin["path"]), "rev-parse", "HEAD"],
                              capture_output=True, text=True, timeout=60)
        assert head.stdout.strip() == pin["commit"], pin["repo"]
    (tmp_path / "empty-mirror").mkdir()
    refused = _hil(venv, "sources", "--dest", str(tmp_path / "other"), cwd=tmp_path,
                   env={**env, "HIL_GIT_BASE": str(tmp_path / "empty-mirror")})
    assert refused.returncode == 3 and len(refused.stderr.splitlines()) == 1, refused.stderr
    assert refused.stderr.startswith(f"hil sources: the pinned firmware sources could not be had from "
                                     f"{tmp_path / 'empty-mirror'}: pytorch/executorch: no repository at")
    assert "Traceback" not in refused.stderr and "`make" not in refused.stderr


@needs_mirror
def test_a_wheel_user_goes_from_the_doctor_to_a_green_runtime_run_with_hil_alone(venv, tmp_path):
    project, sources = tmp_path / "my-project", tmp_path / "sources"
    (project / "tests").mkdir(parents=True)
    (project / "tests" / "test_firmware.py").write_text(RUNTIME_TESTS)
    (project / "pyproject.toml").write_text(USER_INI)
    env = _clean_env(HIL_GIT_BASE=MIRROR, RT700_SDK_DIR=str(sources))
    doctor = _hil(venv, "doctor", "--board", "qemu", cwd=project, env=env)
    assert doctor.returncode == 3, doctor.stdout + doctor.stderr
    missing = next(line for line in doctor.stdout.splitlines() if " firmware sources:" in line)
    assert "MISSING" in missing and str(sources) in missing and "`hil sources`" in doctor.stdout
    assert doctor.stdout.strip().splitlines()[-1].startswith("hil doctor: MISSING firmware sources")
    done = subprocess.run([str(venv / "bin" / "python"), "-m", "pytest", "-q", "-p", "no:cacheprovider", "--board",
                           "qemu", "tests"], cwd=project, capture_output=True, text=True, timeout=2400, env=env)
    assert done.returncode == 0 and "1 passed" in done.stdout, done.stdout[-4000:] + done.stderr[-2000:]
    (run,) = (project / "hil-artifacts").glob("*/*/manifest.json")
    manifest = json.loads(run.read_text())
    assert manifest["firmware_kind"] == "runtime", manifest.get("firmware_kind")
    profile = json.loads((run.parent / "profile.json").read_text())
    assert "sources" in profile["harness_steps_s"]  # assembled on demand, as a step of the run
    assert profile["time_base"]["kind"] == "emulated instructions"
    assert (sources / "workspace.env").is_file()
    doctor = _hil(venv, "doctor", "--board", "qemu", cwd=project, env=env)
    assert doctor.returncode == 0, doctor.stdout + doctor.stderr


def test_the_rt700_image_without_sources_is_one_line_naming_the_command_that_brings_them(venv, tmp_path):
    project = tmp_path / "bench-project"
    (project / "tests").mkdir(parents=True)
    (project / "tests" / "test_bench.py").write_text(
        "def test_on_the_bench(hil_profile):\n    hil_profile('cifar10', delegate='none')\n")
    env = _clean_env(RT700_SDK_DIR=str(tmp_path / "no-sources"), HIL_GIT_BASE="")
    done = subprocess.run([str(venv / "bin" / "python"), "-m", "pytest", "-q", "-p", "no:cacheprovider", "--board",
                           "rt700", "tests"], cwd=project, capture_output=True, text=True, timeout=600, env=env)
    assert done.returncode == 1, done.stdout[-3000:] + done.stderr[-2000:]
    failure = done.stdout.split(" test_on_the_bench ", 1)[1].splitlines()[1]
    # No image of the user's and no workspace to build one from: the missing part, and what brings it.
    assert failure.startswith(f"{project / 'tests' / 'test_bench.py'}:2: EnvironmentFault: board 'rt700': no "
                              f"firmware.elf given (--hil-elf) and no firmware source workspace at "
                              f"{tmp_path / 'no-sources'}"), failure
    assert "`hil sources`" in failure and "or pass your own image" in failure
    assert "Traceback" not in done.stdout and "site-packages/hil/run" not in done.stdout and "`make" not in done.stdout
    # The command it names, on this machine without sources: the missing part, and what brings it (exit 3).
    built = _hil(venv, "rt700-image", "--model", "cifar10", "--out", str(tmp_path / "image"), cwd=project, env=env)
    assert built.returncode == 3 and len(built.stderr.splitlines()) == 1, built.stderr
    assert built.stderr.startswith(f"hil rt700-image: no firmware source workspace at {tmp_path / 'no-sources'}")
    assert "`hil sources`" in built.stderr


# The README's "A first test", with models/ a package whose model imports its sibling both ways and reads its
# weights with safetensors (native code).
README_LAYERS = "import torch\n\nclass Block(torch.nn.Linear):\n    pass\n"
README_MODEL = textwrap.dedent(
    """
    from pathlib import Path
    import torch
    from safetensors.torch import load_file
    from models.layers import Block
    from .layers import Block as SameBlock

    def factory():
        assert Block is SameBlock
        net = torch.nn.Sequential(Block(8, 4), torch.nn.ReLU())
        net[0].load_state_dict(load_file(str(Path(__file__).parent / "weights.safetensors")))
        return net.eval(), (torch.linspace(-1, 1, 8).reshape(1, 8),)
    """
)


def _readme_first_test() -> str:
    readme = (REPO / "README.md").read_text()
    found = re.search(r"```python\n(# tests/test_perf\.py\n.*?)```", readme, re.S)
    assert found, "the README's first test (# tests/test_perf.py) is not where this test looks"
    return found.group(1)


def _save_weights(path: Path, seed: int) -> "dict[str, object]":
    import torch
    from safetensors.torch import save_file

    generator = torch.Generator().manual_seed(seed)
    weights = {"weight": torch.randn(4, 8, generator=generator), "bias": torch.randn(4, generator=generator)}
    save_file(weights, str(path))
    return weights


def test_the_readmes_first_test_from_the_wheel_computes_numerics_and_follows_retrained_weights(venv, tmp_path):
    """The README's first test, verbatim, in a project outside the checkout: it passes on --board qemu with the
    numerics computed (its own assertion); the model package imports its sibling both ways; retrained safetensors
    weights make a new program whose outputs (executorch.runtime) are the new model's (torch in this test)."""
    import hashlib
    import secrets

    import torch
    from executorch.runtime import Runtime

    project = tmp_path / "my-project"
    (project / "tests").mkdir(parents=True)
    (project / "models").mkdir()
    (project / "tests" / "test_perf.py").write_text(_readme_first_test())
    (project / "models" / "__init__.py").write_text("")
    (project / "models" / "layers.py").write_text(README_LAYERS)
    (project / "models" / "my_model.py").write_text(README_MODEL)
    x = torch.linspace(-1, 1, 8).reshape(1, 8)
    runs = []
    first_seed = secrets.randbits(32)  # weights no earlier run put in the suite's shared export cache
    for seed in (first_seed, first_seed + 1):
        weights = _save_weights(project / "models" / "weights.safetensors", seed)
        done = subprocess.run([str(venv / "bin" / "python"), "-m", "pytest", "-q", "-p", "no:cacheprovider", "--board",
                               "qemu", "-k", "test_my_model_is_fast_enough", "tests"], cwd=project,
                              capture_output=True, text=True, timeout=900, env=_clean_env())
        assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
        assert "1 passed" in done.stdout and "outputs not computed" not in done.stdout
        (folder,) = [p.parent for p in project.rglob("hil-artifacts/*/*/profile.json")]  # the same, rewritten
        manifest = json.loads((folder / "manifest.json").read_text())
        pte = (folder / "model.pte").read_bytes()
        runs.append((folder, hashlib.sha256(pte).hexdigest(), manifest))
        (out,) = Runtime.get().load_program(pte).load_method("forward").execute([x])
        assert torch.allclose(out, torch.relu(torch.nn.functional.linear(x, weights["weight"], weights["bias"])),
                              atol=1e-5)
        numerics = json.loads((folder / "profile.json").read_text())["numerics"]
        assert numerics["status"] == "computed" and numerics["vs_eager"], numerics
    assert runs[0][1] != runs[1][1]  # a new program for the retrained weights, not the cached one
    assert [run[2]["aot_cached"] for run in runs] == [False, False]  # the retrained weights missed
    assert "weights.safetensors" in runs[1][2]["aot_followed"]["files"]
