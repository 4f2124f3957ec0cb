"""`hil inspect` gives the answer `hil run` gave, from the files alone, and refuses bad files cleanly."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

KEYS = ("name", "kind", "op_types", "delegate_debug_id", "metadata", "times_us", "p50_us")


@pytest.fixture(scope="module")
def neutron_run(tmp_path_factory):
    """One simulated-Neutron run of cifar10 through the real CLI."""
    out = tmp_path_factory.mktemp("inspect") / "run"
    done = subprocess.run(
        [sys.executable, "-m", "hil.cli", "run", "--board", "qemu", "--model", "cifar10", "--out", str(out),
         "--iterations", "3"],
        cwd=REPO, capture_output=True, text=True, timeout=600,
    )
    assert done.returncode == 0, done.stderr
    return out


def test_inspect_reproduces_the_run_profile(neutron_run, run_cli):
    done = run_cli("inspect", str(neutron_run / "trace.etdump"), "--etrecord", str(neutron_run / "etrecord.bin"),
                   "--board-config", "boards/qemu.toml", "--json")
    assert done.returncode == 0, done.stderr
    again = json.loads(done.stdout)
    original = json.loads((neutron_run / "profile.json").read_text())
    assert [{k: e.get(k) for k in KEYS} for e in again["events"]] == [
        {k: e.get(k) for k in KEYS} for e in original["events"]
    ]
    assert again["totals_us"] == original["totals_us"]
    assert again["npu_fraction"] == original["npu_fraction"] > 0
    assert again["cpu_fallback_ops"] == original["cpu_fallback_ops"]


def test_inspect_table_names_kernels_and_fallbacks(neutron_run, run_cli):
    done = run_cli("inspect", str(neutron_run / "trace.etdump"), "--etrecord", str(neutron_run / "etrecord.bin"),
                   "--clock-mhz", "324")
    assert done.returncode == 0, done.stderr
    assert "npu_kernel" in done.stdout and "profiling_dump" in done.stdout and "NPU fraction" in done.stdout


def test_without_a_clock_ticks_are_read_as_nanoseconds(neutron_run, run_cli, tmp_path):
    for name in ("trace.etdump", "etrecord.bin"):  # away from serial.log, whose clock line would apply
        (tmp_path / name).write_bytes((neutron_run / name).read_bytes())
    done = run_cli("inspect", str(tmp_path / "trace.etdump"), "--etrecord", str(tmp_path / "etrecord.bin"), "--json")
    assert done.returncode == 0, done.stderr
    in_ns = json.loads(done.stdout)
    original = json.loads((neutron_run / "profile.json").read_text())
    ratio = in_ns["totals_us"]["method_execute"] / original["totals_us"]["method_execute"]
    assert ratio == pytest.approx(324 / 1000, rel=1e-3)


@pytest.mark.parametrize("damage", ["truncate", "foreign"])
def test_a_damaged_or_foreign_etdump_is_refused_without_a_traceback(neutron_run, run_cli, tmp_path, damage):
    data = (neutron_run / "trace.etdump").read_bytes()
    bad = tmp_path / "bad.etdump"
    bad.write_bytes(data[: len(data) // 2] if damage == "truncate" else (neutron_run / "model.pte").read_bytes())
    done = run_cli("inspect", str(bad), "--etrecord", str(neutron_run / "etrecord.bin"))
    assert done.returncode != 0
    assert str(bad) in done.stderr and "Traceback" not in done.stderr
