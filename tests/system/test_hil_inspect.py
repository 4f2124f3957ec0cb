"""`hil inspect` gives the answer `hil run` gave, from the files alone; bare files without a clock stay in
ticks; a board file's clock applies to tick-based dumps only; bad files are refused cleanly.

Independent truths: simulation.json (the ticks the simulated board wrote, per clock) and the raw
ETDump flatbuffer decoded by ExecuTorch's own deserializer.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]



def replay_board(folder: Path) -> Path:
    """boards/qemu.toml asking for the replay image: these runs check the replay's arithmetic against its
    simulation.json and the host runtime's nanoseconds (the runtime image's `hil inspect` round trip is in
    test_qemu_runtime.py)."""
    text = (REPO / "boards" / "qemu.toml").read_text()
    assert 'firmware = "auto"' in text
    path = folder / "qemu.toml"
    path.write_text(text.replace('firmware = "auto"', 'firmware = "replay"'))
    return path



def _run(out: Path, *extra: str) -> Path:
    done = subprocess.run(
        [sys.executable, "-m", "hil.cli.main", "run", "--board-config", str(replay_board(out.parent)), "--model", "cifar10",
         "--out", str(out), "--iterations", "5", *extra],
        cwd=REPO, capture_output=True, text=True, timeout=600,
    )
    assert done.returncode == 0, done.stderr
    return out


@pytest.fixture(scope="module")
def neutron_run(tmp_path_factory):
    """One simulated-Neutron run of int8 cifar10 (5 iterations after 1 warm-up) through the real CLI (a float
    program gives the simulated NPU nothing: it runs int8 only)."""
    return _run(tmp_path_factory.mktemp("inspect") / "run", "--warmup", "1", "--quantize")


@pytest.fixture(scope="module")
def cpu_run(tmp_path_factory):
    """One CPU-only run: the host runtime's nanoseconds."""
    return _run(tmp_path_factory.mktemp("inspect") / "cpu", "--no-delegate")


def _bare(run: Path, tmp_path: Path) -> tuple[str, str, str]:
    """The dump and ETRecord copied away from the run's console and manifest."""
    for name in ("trace.etdump", "etrecord.bin"):
        (tmp_path / name).write_bytes((run / name).read_bytes())
    return str(tmp_path / "trace.etdump"), "--etrecord", str(tmp_path / "etrecord.bin")


def _method_durations(etdump: Path) -> list[int]:
    from executorch.devtools.etdump.serialize import deserialize_from_etdump_flatcc

    dump = deserialize_from_etdump_flatcc(etdump.read_bytes())
    return [e.profile_event.end_time - e.profile_event.start_time for run in dump.run_data for e in run.events
            if e.profile_event and e.profile_event.name == "Method::execute"]


def test_inspect_run_dir_reproduces_the_run_profile(neutron_run, run_cli):
    done = run_cli("inspect", str(neutron_run), "--json")
    assert done.returncode == 0, done.stderr
    again = json.loads(done.stdout)
    original = json.loads((neutron_run / "profile.json").read_text())
    original.pop("harness_steps_s")  # how long the harness took: no file holds it
    assert again == original
    simulation = json.loads((neutron_run / "simulation.json").read_text())
    assert again["time_unit"] == "us" and again["warmup_iterations"] == 1
    (method,) = [e for e in again["events"] if e["kind"] == "method"]
    assert method["times_us"] == [round(t / 324, 3) for t in simulation["method_execute_ticks"][1:]]


def test_bare_files_without_a_clock_are_reported_in_ticks(neutron_run, run_cli, tmp_path):
    bare = _bare(neutron_run, tmp_path)
    done = run_cli("inspect", *bare, "--json")
    assert done.returncode == 0, done.stderr
    profile = json.loads(done.stdout)
    simulation = json.loads((neutron_run / "simulation.json").read_text())
    assert profile["time_unit"] == "ticks"
    (method,) = [e for e in profile["events"] if e["kind"] == "method"]
    assert method["times_us"] == simulation["method_execute_ticks"]
    table = run_cli("inspect", *bare)
    assert table.returncode == 0, table.stderr
    head = table.stdout.splitlines()[:2]
    assert "times in ticks" in head[0] and "p50 ticks" in head[1] and " us" not in "\n".join(head)
    assert "Method::execute" in table.stdout and " us " not in table.stdout.split("\n\n")[1].split("NPU fraction")[0]


def test_a_board_file_gives_cpu_and_npu_their_own_clocks(neutron_run, run_cli, tmp_path):
    done = run_cli("inspect", *_bare(neutron_run, tmp_path), "--board-config", str(replay_board(tmp_path)), "--json")
    assert done.returncode == 0, done.stderr
    profile = json.loads(done.stdout)
    simulation = json.loads((neutron_run / "simulation.json").read_text())
    assert (simulation["clock_mhz"], simulation["npu_clock_mhz"]) == (324, 250)
    kernels = [e for e in profile["events"] if e["kind"] == "npu_kernel"]
    expected = [k["ticks"] for d in simulation["delegates"] for k in d["kernels"]]
    assert [e["times_us"] for e in kernels] == [[round(t / 250, 3) for t in ticks] for ticks in expected]


def test_a_board_files_clock_never_applies_to_the_host_runtimes_nanoseconds(cpu_run, run_cli, tmp_path):
    done = run_cli("inspect", *_bare(cpu_run, tmp_path), "--board-config", str(replay_board(tmp_path)), "--json")
    assert done.returncode == 0, done.stderr
    (method,) = [e for e in json.loads(done.stdout)["events"] if e["kind"] == "method"]
    assert method["times_us"] == [round(ns / 1000, 3) for ns in _method_durations(cpu_run / "trace.etdump")]
    again = json.loads(run_cli("inspect", str(cpu_run), "--json").stdout)
    original = json.loads((cpu_run / "profile.json").read_text())
    original.pop("harness_steps_s")
    assert again == original


@pytest.mark.parametrize("damage", ["truncate", "foreign"])
def test_a_damaged_or_foreign_etdump_is_refused_without_a_traceback(neutron_run, run_cli, tmp_path, damage):
    data = (neutron_run / "trace.etdump").read_bytes()
    bad = tmp_path / "bad.etdump"
    bad.write_bytes(data[: len(data) // 2] if damage == "truncate" else (neutron_run / "model.pte").read_bytes())
    done = run_cli("inspect", str(bad), "--etrecord", str(neutron_run / "etrecord.bin"))
    assert done.returncode != 0
    assert str(bad) in done.stderr and "Traceback" not in done.stderr


def test_a_flipped_bit_or_a_changed_clock_line_of_a_real_run_is_exit_3(neutron_run, run_cli, tmp_path):
    import hashlib
    import shutil
    import zlib

    copy = tmp_path / "run"
    shutil.copytree(neutron_run, copy)
    manifest = json.loads((copy / "manifest.json").read_text())
    dump = (copy / "trace.etdump").read_bytes()
    assert manifest["files"]["trace.etdump"]["sha256"] == hashlib.sha256(dump).hexdigest()
    assert manifest["etdump_crc32"]["checked"] and manifest["etdump_crc32"]["firmware"] == f"0x{zlib.crc32(dump):08x}"
    assert run_cli("inspect", str(copy), "--json").returncode == 0
    flipped = bytearray(dump)
    flipped[391] ^= 0x01
    (copy / "trace.etdump").write_bytes(bytes(flipped))
    done = run_cli("inspect", str(copy))
    assert done.returncode == 3 and done.stderr.startswith(f"hil inspect: {copy / 'trace.etdump'}: sha256 "), done.stderr
    (copy / "trace.etdump").write_bytes(dump)
    log = (copy / "serial.log").read_bytes()  # bytes: the console's CR LF kept, so only one digit differs
    changed = re.sub(rb"(Frequency: )(\d)", lambda m: m.group(1) + str((int(m.group(2)) + 1) % 10).encode(), log,
                     count=1)
    assert changed != log and len(changed) == len(log)
    (copy / "serial.log").write_bytes(changed)
    done = run_cli("inspect", str(copy))
    assert done.returncode == 3 and done.stderr.startswith(f"hil inspect: {copy / 'serial.log'}: sha256 "), done.stderr
    assert run_cli("inspect", str(copy), "--no-verify").returncode == 0
