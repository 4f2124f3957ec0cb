"""`hil doctor`: names what is missing (with the fix), reports probes, and never hangs."""

from __future__ import annotations

import io
import re
import time

from fake_pyocd import FakeBench, FakeProbe

import hil.cli.doctor as doctor
from hil.config.board_config import load_board_config
from hil.cli.doctor import run_doctor

UID = "0BFJXK2W3NM3J"


def _run(cfg) -> tuple[int, str, float]:
    out = io.StringIO()
    start = time.monotonic()
    rc = run_doctor(cfg, out=out)
    return rc, out.getvalue(), time.monotonic() - start


def _line(text: str, name: str) -> str:
    return next(line for line in text.splitlines() if f" {name}:" in line)


def test_rt700_on_a_machine_without_pack_or_probe(monkeypatch, tmp_path):
    """This machine: real pyOCD 0.46.0 without NXP's pack, no probe attached, no source workspace."""
    monkeypatch.delenv("MCUX_SDK", raising=False)
    monkeypatch.setenv("RT700_SDK_DIR", str(tmp_path))
    rc, text, took = _run(load_board_config("rt700"))
    assert rc != 0 and took < 30
    assert "MISSING" in _line(text, "pyOCD target mimxrt798sgfob")
    assert "pyocd pack install mimxrt798sgfob" in text
    assert "MISSING" in _line(text, "debug probes")
    assert "MISSING" in _line(text, "MCUX_SDK") and "export MCUX_SDK" in text and "`hil sources`" in text
    last = text.strip().splitlines()[-1]
    assert last.startswith("hil doctor: MISSING") and "pyOCD target mimxrt798sgfob" in last and "debug probes" in last
    assert _line(text, "pyOCD").lstrip().startswith("ok") and "0.46.0" in _line(text, "pyOCD")


def test_probe_from_pyocd_is_reported_with_its_id(monkeypatch):
    FakeBench(probes=[FakeProbe(UID)]).install(monkeypatch)
    rc, text, _ = _run(load_board_config("rt700"))
    line = _line(text, "debug probes")
    assert line.lstrip().startswith("ok") and UID in line and "MCU-LINK" in line
    assert rc != 0  # the pack is still missing here


def test_two_probes_without_an_id_is_flagged(monkeypatch):
    FakeBench(probes=[FakeProbe(UID), FakeProbe("AAQ3QZ0NUV1ZX")]).install(monkeypatch)
    _, text, _ = _run(load_board_config("rt700"))
    line = _line(text, "debug probes")
    assert "MISSING" in line and UID in line and "AAQ3QZ0NUV1ZX" in line and "no probe id" in line


def test_paths_come_from_the_rt700_sdk_workspace(monkeypatch, tmp_path):
    for env in ("MCUX_SDK", "EXECUTORCH_ROOT", "NEUTRON_LIB_DIR"):
        monkeypatch.delenv(env, raising=False)
    sdk, et, libs = tmp_path / "ws" / "mcuxsdk", tmp_path / "ws" / "executorch", tmp_path / "ws" / "cm33"
    for folder in (sdk / "devices", et, libs):
        folder.mkdir(parents=True)
    (et / "CMakeLists.txt").write_text("")
    for lib in ("libNeutronDriver.a", "libNeutronFirmware.a"):
        (libs / lib).write_bytes(b"!<arch>\n")
    # as `make rt700-sdk` writes it
    (tmp_path / "ws" / "workspace.env").write_text(
        f"# written by hil.firmware.workspace\nexport MCUX_SDK={sdk}\nexport EXECUTORCH_ROOT={et}\n"
        f"export NEUTRON_LIB_DIR={libs}\n")
    monkeypatch.setenv("RT700_SDK_DIR", str(tmp_path / "ws"))
    _, text, _ = _run(load_board_config("rt700"))
    for env, path in (("MCUX_SDK", sdk), ("EXECUTORCH_ROOT", et), ("NEUTRON_LIB_DIR", libs)):
        assert _line(text, env).lstrip().startswith("ok") and str(path) in _line(text, env)


def test_paths_from_environment_are_checked(monkeypatch, tmp_path):
    libs = tmp_path / "cm33"
    libs.mkdir()
    (libs / "libNeutronDriver.a").write_bytes(b"!<arch>\n")
    monkeypatch.setenv("NEUTRON_LIB_DIR", str(libs))
    monkeypatch.setenv("MCUX_SDK", str(tmp_path))
    (tmp_path / "devices").mkdir()
    _, text, _ = _run(load_board_config("rt700"))
    assert _line(text, "MCUX_SDK").lstrip().startswith("ok")
    assert "MISSING" in _line(text, "NEUTRON_LIB_DIR") and "libNeutronFirmware.a" in _line(text, "NEUTRON_LIB_DIR")
    (libs / "libNeutronFirmware.a").write_bytes(b"!<arch>\n")
    _, text, _ = _run(load_board_config("rt700"))
    assert _line(text, "NEUTRON_LIB_DIR").lstrip().startswith("ok")


def test_missing_gdb_names_the_fix():
    cfg = load_board_config("rt700").with_overrides({"debug.gdb": "no-such-gdb-xyz"})
    rc, text, _ = _run(cfg)
    assert rc != 0 and "MISSING" in _line(text, "GDB") and "--hil-gdb" in text


def test_a_hanging_check_is_cut_off(monkeypatch):
    """A USB enumeration that hangs must not hang the doctor."""
    FakeBench(probes=[FakeProbe(UID)], list_delay_s=5).install(monkeypatch)
    monkeypatch.setattr(doctor, "CHECK_TIMEOUT_S", 0.5)
    rc, text, took = _run(load_board_config("rt700"))
    assert rc != 0 and took < 3
    assert "no answer within 0.5 s" in _line(text, "debug probes")


def test_without_a_board_only_general_checks_run():
    _, text, took = _run(None)
    assert "no board" in text.splitlines()[0] and took < 30
    assert " GDB:" in text and " pyOCD:" in text and "pyOCD target" not in text and "MCUX_SDK" not in text


def _gdb_line(gdb: str) -> str:
    rc, text, _ = _run(load_board_config("qemu").with_overrides({"debug.gdb": gdb}))
    return _line(text, "GDB")


def test_a_gdb_that_runs_but_is_not_gdb_is_missing(tmp_path):
    """Found on PATH is not enough: `--version` must exit 0 and answer with gdb's banner."""
    assert _gdb_line("/bin/false").lstrip().startswith("MISSING  GDB: `/bin/false --version` exited with status 1")
    assert re.search(r"`/bin/true --version` answered 'true \(GNU coreutils\) [\d.]+', not the tool's banner$",
                     _gdb_line("/bin/true"))
    script = tmp_path / "gdb"
    script.write_text("#!/bin/sh\necho 'GNU gdb (lab build) 14.2'\n")
    script.chmod(0o755)
    assert _gdb_line(str(script)).lstrip() == f"ok       GDB: {script} (GNU gdb (lab build) 14.2)"


def test_setpriv_is_named_with_the_package_that_holds_it(monkeypatch, tmp_path):
    """Children die with the harness through setpriv; without it on PATH the doctor says so and names util-linux."""
    from shutil import which

    found = doctor.check_lifeline(None)
    if which("setpriv"):
        assert found.ok and found.detail.startswith(which("setpriv"))
    monkeypatch.setenv("PATH", str(tmp_path))  # an empty folder: no setpriv
    missing = doctor.check_lifeline(None)
    assert (missing.ok, missing.required) == (False, False) and "util-linux" in missing.fix
    assert "-I -S" in missing.detail  # what stands in for it: a fresh Python
