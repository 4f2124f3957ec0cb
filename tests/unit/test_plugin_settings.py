"""Project defaults where pytest users look: command line > environment (HIL_*) > ini file > board file >
built-in default, checked in real pytest sessions (child processes) of a project with its own ini file.
The expected values are written out by hand for each case."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPORT = textwrap.dedent(
    """
    import json, os
    from hil.run.request import RunRequest, check_request

    def test_report(pytestconfig, hil_board_config, tmp_path):
        opt = pytestconfig.option
        timeout = check_request(RunRequest(model="cifar10", board=hil_board_config, out_dir=tmp_path,
                                           timeout_s=opt.hil_timeout)).timeout_s
        values = {"board": hil_board_config.name, "iterations": opt.hil_iterations, "warmup": opt.hil_warmup,
                  "timeout": timeout, "artifacts": str(opt.hil_artifacts), "tolerance": opt.hil_tolerance,
                  "history": str(opt.hil_history), "baseline": str(opt.hil_baseline),
                  "firmware": [hil_board_config.get("qemu.firmware"), hil_board_config.origin("qemu.firmware")]}
        with open(os.environ["HIL_TEST_REPORT"], "w") as out:
            json.dump(values, out)
    """
)
INI = textwrap.dedent(
    """
    [tool.pytest.ini_options]
    hil_board = "bench"
    hil_iterations = "3"
    hil_warmup = "1"
    hil_timeout = "30"
    hil_artifacts = "out/ini"
    hil_tolerance = "10%"
    hil_history = "db/history.sqlite"
    hil_firmware = "replay"
    """
)
ENV_NAMES = ("HIL_BOARD", "HIL_BOARD_CONFIG", "HIL_ARTIFACTS", "HIL_ITERATIONS", "HIL_WARMUP", "HIL_TIMEOUT",
             "HIL_BASELINE", "HIL_HISTORY", "HIL_TOLERANCE", "HIL_FIRMWARE", "HIL_ALLOW_NONFINITE_INPUTS",
             "HIL_FORCE_FLASH", "HIL_KEEP_QEMU", "HIL_QUANTIZE")


def _session(project: Path, *args: str, **env: str) -> subprocess.CompletedProcess:
    clean = {k: v for k, v in os.environ.items() if k not in ENV_NAMES}
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:pytest_embedded",
                           "--rootdir", str(project), *args, "test_report.py"], cwd=project, capture_output=True,
                          text=True, timeout=300, env={**clean, **env, "HIL_TEST_REPORT": str(project / "report.json")})


def _values(project: Path, *args: str, **env: str) -> dict:
    done = _session(project, *args, **env)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    return json.loads((project / "report.json").read_text())


REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A project with its own board file `bench` (the QEMU board, allowed 77 s a run)."""
    (tmp_path / "test_report.py").write_text(REPORT)
    bench = (REPO / "boards" / "qemu.toml").read_text().replace('name = "qemu"', 'name = "bench"')
    assert "timeout_s = 120" in bench
    (tmp_path / "boards").mkdir()
    (tmp_path / "boards" / "bench.toml").write_text(bench.replace("timeout_s = 120", "timeout_s = 77"))
    return tmp_path


def test_without_settings_the_built_in_defaults_and_the_board_files_timeout(project):
    values = _values(project)
    # qemu's timeout is boards/qemu.toml's [debug].timeout_s
    assert values == {"board": "qemu", "iterations": 5, "warmup": 0, "timeout": 120.0, "artifacts": "hil-artifacts",
                      "tolerance": 0.05, "history": "None", "baseline": "None",
                      "firmware": ["auto", f"board file {REPO / 'boards' / 'qemu.toml'}"]}


def test_the_ini_file_sets_project_defaults_relative_to_itself(project):
    (project / "pyproject.toml").write_text(INI)
    values = _values(project)
    assert values == {"board": "bench", "iterations": 3, "warmup": 1, "timeout": 30.0,
                      "artifacts": str(project / "out" / "ini"), "tolerance": 0.10,
                      "history": str(project / "db" / "history.sqlite"), "baseline": "None",
                      "firmware": ["replay", f"{project / 'pyproject.toml'} [hil_firmware]"]}


def test_the_board_file_decides_what_nobody_else_set(project):
    (project / "pyproject.toml").write_text('[tool.pytest.ini_options]\nhil_board = "bench"\n')
    assert _values(project)["timeout"] == 77.0
    assert _values(project, HIL_TIMEOUT="12")["timeout"] == 12.0


def test_the_environment_wins_over_the_ini_file(project):
    (project / "pyproject.toml").write_text(INI)
    (project / "base").mkdir()  # a baseline folder that does not exist is refused (hil.plugin.regress_hooks)
    values = _values(project, HIL_BOARD="qemu", HIL_ITERATIONS="7", HIL_TOLERANCE="0.2", HIL_BASELINE="base")
    assert (values["board"], values["iterations"], values["tolerance"], values["baseline"]) == ("qemu", 7, 0.2, "base")
    assert (values["warmup"], values["timeout"]) == (1, 30.0)  # the rest still from the ini file
    assert _values(project, HIL_FIRMWARE="runtime")["firmware"] == ["runtime", "environment HIL_FIRMWARE"]


def test_the_command_line_wins_over_both(project):
    (project / "pyproject.toml").write_text(INI)
    values = _values(project, "--board", "bench", "--hil-iterations", "9", "--hil-timeout", "45",
                     HIL_BOARD="qemu", HIL_ITERATIONS="7", HIL_TIMEOUT="60")
    assert (values["board"], values["iterations"], values["timeout"]) == ("bench", 9, 45.0)
    values = _values(project, "--hil-firmware", "auto", HIL_FIRMWARE="runtime")  # over the env and the ini's "replay"
    assert values["firmware"] == ["auto", "command line --hil-firmware"]


def test_a_board_name_on_a_higher_level_beats_a_board_file_on_a_lower_one(project):
    (project / "pyproject.toml").write_text('[tool.pytest.ini_options]\nhil_board_config = "boards/bench.toml"\n')
    assert _values(project)["board"] == "bench"  # the ini file's board file, relative to the ini file
    assert _values(project, HIL_BOARD="qemu")["board"] == "qemu"
    assert _values(project, "--board", "qemu")["board"] == "qemu"
    assert _values(project, "--board", "qemu", HIL_BOARD_CONFIG=str(project / "boards" / "bench.toml"))["board"] == "qemu"


def test_a_bad_value_names_where_it_came_from(project):
    done = _session(project, HIL_ITERATIONS="many")
    assert done.returncode != 0 and "environment variable HIL_ITERATIONS: 'many'" in done.stderr, done.stderr
    (project / "pyproject.toml").write_text('[tool.pytest.ini_options]\nhil_tolerance = "fast"\n')
    done = _session(project)
    assert done.returncode != 0 and f"{project / 'pyproject.toml'} [hil_tolerance]: 'fast'" in done.stderr, done.stderr
    (project / "pyproject.toml").unlink()
    done = _session(project, HIL_FIRMWARE="runtim")  # a typo is refused, never taken for "auto"
    assert done.returncode != 0 and "environment variable HIL_FIRMWARE: 'runtim'" in done.stderr, done.stderr
    assert "runtime, replay, auto" in done.stderr


NONFINITE = textwrap.dedent(
    """
    import os

    def test_report(pytestconfig):
        with open(os.environ["HIL_TEST_REPORT"], "w") as out:
            out.write(repr(pytestconfig.getoption("hil_allow_nonfinite_inputs")))
    """
)


@pytest.mark.parametrize(("ini", "args", "env", "allowed"), [
    (None, (), {}, False),  # refused by default
    ("yes", (), {}, True),
    ("on", (), {"HIL_ALLOW_NONFINITE_INPUTS": "0"}, False),  # the environment wins over the ini file
    ("off", ("--hil-allow-nonfinite-inputs",), {"HIL_ALLOW_NONFINITE_INPUTS": "false"}, True),  # the command line over both
    (None, (), {"HIL_ALLOW_NONFINITE_INPUTS": "TRUE"}, True),
])
def test_nonfinite_inputs_are_allowed_from_the_command_line_the_environment_or_the_ini_file(project, ini, args, env,
                                                                                         allowed):
    (project / "test_report.py").write_text(NONFINITE)
    if ini is not None:
        (project / "pyproject.toml").write_text(f'[tool.pytest.ini_options]\nhil_allow_nonfinite_inputs = "{ini}"\n')
    done = _session(project, *args, **env)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert (project / "report.json").read_text() == repr(allowed)


@pytest.mark.parametrize(("key", "variable", "flag"), [("hil_force_flash", "HIL_FORCE_FLASH", "--hil-force-flash"),
                                                    ("hil_quantize", "HIL_QUANTIZE", "--hil-quantize")])
def test_force_flash_and_quantize_come_from_the_command_line_the_environment_or_the_ini_file(project, key, variable,
                                                                                           flag):
    (project / "test_report.py").write_text(NONFINITE.replace("hil_allow_nonfinite_inputs", key))
    for ini, args, env, forced in ((None, (), {}, False), ("on", (), {variable: "no"}, False),
                                   ("off", (flag,), {}, True), (None, (), {variable: "1"}, True)):
        (project / "pyproject.toml").write_text(f'[tool.pytest.ini_options]\n{key} = "{ini}"\n'
                                                if ini else "")
        done = _session(project, *args, **env)
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
        assert (project / "report.json").read_text() == repr(forced), (ini, args, env)


KEEPER = textwrap.dedent(
    """
    import os

    def test_report(_hil_qemu_keeper):
        with open(os.environ["HIL_TEST_REPORT"], "w") as out:
            out.write(repr(_hil_qemu_keeper is not None))
    """
)


def test_a_session_keeps_qemu_unless_the_command_line_the_environment_or_the_ini_file_says_no(project):
    (project / "test_report.py").write_text(KEEPER)
    for ini, args, env, keeps in ((None, (), {}, True), ("false", (), {}, False),
                                  ("off", (), {"HIL_KEEP_QEMU": "1"}, True), ("on", (), {"HIL_KEEP_QEMU": "0"}, False),
                                  (None, ("--hil-no-keep-qemu",), {"HIL_KEEP_QEMU": "yes"}, False),
                                  ("no", ("--hil-keep-qemu",), {"HIL_KEEP_QEMU": "no"}, True)):
        (project / "pyproject.toml").write_text(f'[tool.pytest.ini_options]\nhil_keep_qemu = "{ini}"\n'
                                                if ini else "")
        done = _session(project, *args, **env)
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
        assert (project / "report.json").read_text() == repr(keeps), (ini, args, env)
    assert not (project / "hil-artifacts").exists()  # no QEMU started: no folder for kept logs either


def test_a_switch_that_is_no_yes_or_no_is_refused_naming_where_it_came_from(project):
    done = _session(project, HIL_ALLOW_NONFINITE_INPUTS="maybe")  # never taken for "no"
    assert done.returncode == 4, done.stdout + done.stderr
    assert ("ERROR: environment variable HIL_ALLOW_NONFINITE_INPUTS: 'maybe' is not a valid value for"
            " hil_allow_nonfinite_inputs (say one of 1, true, yes, on, 0, false, no, off)") in done.stderr, done.stderr
