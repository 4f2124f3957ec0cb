"""The `hil` command and the pytest plugin's options behave as command lines usually do.

Each case runs the real command in a child process and reads what a person would read.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from hil.base import atomic
from test_regress_synth import synth_profile

REPO = Path(__file__).resolve().parents[2]


def hil(*args: str, cwd: Path = REPO, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "hil.cli.main", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=timeout, env=os.environ.copy())


def test_hil_alone_prints_help_listing_every_command():
    done = hil()
    assert done.returncode == 0 and done.stdout.startswith("usage: hil")
    for command in ("run", "export", "inspect", "doctor", "check-image", "firmware-sources", "compare", "baseline",
                    "report", "trace"):
        assert re.search(rf"^\s+{command}\s", done.stdout, re.M), command
    assert "exit status: 0 ok; 1 a test or regression failure; 2 a usage or input error" in " ".join(done.stdout.split())


def test_version_is_the_installed_distributions():
    done = hil("--version")
    assert done.returncode == 0 and done.stdout.strip() == f"hil (et-hil) {importlib.metadata.version('et-hil')}"


def test_a_usage_error_exits_2():
    assert hil("run", "--board", "qemu").returncode == 2  # --model and --out missing
    assert hil("no-such-command").returncode == 2


def test_metavars_read_as_values_and_the_plugin_registers_only_prefixed_options():
    done = subprocess.run([sys.executable, "-m", "pytest", "--help", "-p", "no:cacheprovider"], cwd=REPO,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    text = done.stdout
    for shown in ("--hil-probe=ID", "--hil-port=URL", "--hil-elf=ELF", "--hil-board-config=FILE", "--board=NAME",
                  "--hil-history=DB", "--hil-iterations=N"):  # pytest's help writes OPTION=METAVAR
        assert shown in text, shown
    section = text[text.index("et-hil hardware-in-the-loop"):]
    section = section[: section.index("\n\n")]
    options = re.findall(r"^  (--[a-z-]+)", section, re.M)
    assert options and all(o == "--board" or o.startswith("--hil-") for o in options), options
    assert not re.search(r"=HIL_[A-Z_]+", section)  # argparse's default metavar, a dest in capitals
    assert "[env HIL_BOARD, ini hil_board]" in section  # where else a value may come from (hil.plugin.settings)


def test_doctor_json(tmp_path):
    done = hil("doctor", "--board", "qemu", "--json", timeout=60)
    doc = json.loads(done.stdout)
    assert doc["board"] == "qemu" and doc["board_file"].endswith("qemu.toml")
    assert {c["name"] for c in doc["checks"]} >= {"GDB", "QEMU", "arm-none-eabi-gcc"}
    assert done.returncode == (0 if doc["ok"] else 3)


def test_compare_refuses_runs_of_different_models_or_boards(tmp_path):
    base = synth_profile(seed=1)
    for name, change in (("model", {"model": "othernet"}), ("board", {"board": "rt700"})):
        atomic.write_json(tmp_path / "a.json", base)
        atomic.write_json(tmp_path / "b.json", {**base, **change})
        done = hil("compare", str(tmp_path / "a.json"), str(tmp_path / "b.json"))
        assert done.returncode == 2, done.stdout + done.stderr
        a, b = tmp_path / "a.json", tmp_path / "b.json"  # each side named by its file
        assert f"A ({a}) is {name} {base[name]!r}, B ({b}) is {name} {change[name]!r}" in done.stderr
    atomic.write_json(tmp_path / "b.json", base)
    assert hil("compare", str(tmp_path / "a.json"), str(tmp_path / "b.json")).returncode == 0


@pytest.mark.parametrize(("args", "code"), [
    (["inspect", "no-such.etdump", "--etrecord", "no-such.bin"], 2),  # an input file that is not there
    (["run", "--board", "qemu", "--model", "no_such_model", "--out", "{tmp}/run"], 2),  # an unknown model
])
def test_input_errors_exit_2(tmp_path, args, code):
    done = hil(*[a.replace("{tmp}", str(tmp_path)) for a in args], timeout=300)
    assert done.returncode == code, done.stderr
    assert "Traceback" not in done.stderr


_EXIT_CHILD = """
import atexit, sys
class Teardown:
    def __del__(self):
        sys.__stdout__.write("teardown ran\\n")
kept = Teardown()  # freed only when the interpreter tears its modules down
atexit.register(lambda: print("atexit ran"))
sys.stdout.write("x" * 100000)  # still in the pipe's buffer when the command ends
sys.argv = ["hil", *sys.argv[1:]]
from hil.cli.main import console_main
console_main()
"""


@pytest.mark.parametrize(("args", "torn_down"), [
    # files that are there but hold no ETDump/ETRecord (each only the header that passes the magic check made
    # before the imports): the Inspector (torch) is loaded before they are read
    (["inspect", "{tmp}/empty.etdump", "--etrecord", "{tmp}/empty.bin"], False),
    (["compare", "no-such-a.json", "no-such-b.json"], True),  # never loads torch: an ordinary exit
])
def test_the_hil_command_skips_the_teardown_only_once_torch_is_loaded(tmp_path, args, torn_down):
    (tmp_path / "empty.etdump").write_bytes(bytes(8) + b"ED00")  # a size prefix and root offset of 0, "ED00"
    (tmp_path / "empty.bin").write_bytes(b"PK\x03\x04")  # a zip's local-file magic, and nothing after it
    args = [a.replace("{tmp}", str(tmp_path)) for a in args]
    buffered = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}  # stdout buffered, as usual
    done = subprocess.run([sys.executable, "-c", _EXIT_CHILD, *args], cwd=REPO, capture_output=True, text=True,
                          timeout=300, env=buffered)
    assert done.returncode == 2 and f"hil {args[0]}: " in done.stderr, done.stderr
    # whatever the exit: the output still buffered and the atexit handlers are kept
    assert done.stdout.startswith("x" * 100000 + "atexit ran\n")
    assert ("teardown ran" in done.stdout) is torn_down
