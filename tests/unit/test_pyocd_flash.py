"""Flashing through pyOCD's API: probe choice, clear errors, the single recorded retry, timeouts.

The probe is played by tests/unit/fake_pyocd.py (raising pyOCD's real exceptions); the target
lookup tests use the real pyOCD 0.46.0 installed here.
"""

from __future__ import annotations

import time

import pytest
from fake_pyocd import FakeBench, FakeProbe
from pyocd.core import exceptions

from hil.config.board_config import load_board_config
from hil.base.errors import BoardConfigError, TargetError, TimeoutExpired
from hil.probe import pyocd_flash
from hil.probe.pyocd_flash import flash_image, list_probes, open_session, resolve_probe_id, target_support

UID_A = "0BFJXK2W3NM3J"
UID_B = "AAQ3QZ0NUV1ZX"


@pytest.fixture
def cfg():
    return load_board_config("rt700")


@pytest.fixture
def elf(tmp_path):
    path = tmp_path / "hil_rt700.elf"
    path.write_bytes(b"\x7fELF fake image for the fake programmer")
    return path


def test_no_probe_connected(monkeypatch, cfg):
    FakeBench(probes=[]).install(monkeypatch)
    with pytest.raises(TargetError, match="no debug probe is connected"):
        open_session(cfg)


def test_several_probes_and_no_id_lists_them(monkeypatch, cfg):
    FakeBench(probes=[FakeProbe(UID_A), FakeProbe(UID_B)]).install(monkeypatch)
    with pytest.raises(BoardConfigError) as err:
        open_session(cfg)
    assert UID_A in str(err.value) and UID_B in str(err.value) and "--hil-probe" in str(err.value)


def test_given_id_not_connected(monkeypatch, cfg):
    FakeBench(probes=[FakeProbe(UID_A)]).install(monkeypatch)
    with pytest.raises(TargetError) as err:
        open_session(cfg.with_overrides({"pyocd.probe_id": UID_B}))
    assert f"probe '{UID_B}' is not connected" in str(err.value) and UID_A in str(err.value)


def test_id_is_matched_exactly_not_as_a_substring(monkeypatch, cfg):
    """pyOCD matches ids by substring; flashing the wrong board must not happen by a prefix."""
    FakeBench(probes=[FakeProbe(UID_A), FakeProbe(UID_A + "9")]).install(monkeypatch)
    assert resolve_probe_id(cfg.with_overrides({"pyocd.probe_id": UID_A.lower()})) == UID_A
    with pytest.raises(TargetError):
        resolve_probe_id(cfg.with_overrides({"pyocd.probe_id": UID_A[:6]}))


def test_single_probe_is_chosen_and_session_gets_board_settings(monkeypatch, cfg, tmp_path):
    pack = tmp_path / "NXP.MIMXRT798S_DFP.25.06.00.pack"
    pack.write_bytes(b"PK")
    bench = FakeBench(probes=[FakeProbe(UID_A)]).install(monkeypatch)
    assert [p.unique_id for p in list_probes()] == [UID_A]
    session = open_session(cfg.with_overrides({"pyocd.pack": str(pack), "pyocd.frequency_hz": 1_000_000}))
    assert session.is_open and session.probe.unique_id == UID_A
    assert session.options["target_override"] == "mimxrt798sgfob"
    assert session.options["pack"] == str(pack) and session.options["frequency"] == 1_000_000
    # Closing the session must leave the core halted for the serial reader and the breakpoint.
    assert session.options["resume_on_disconnect"] is False
    assert bench.calls[-1] == ("open", UID_A)


def test_unknown_target_says_how_to_install_the_pack(monkeypatch, cfg):
    bench = FakeBench(probes=[FakeProbe(UID_A)], known_targets=()).install(monkeypatch)
    with pytest.raises(BoardConfigError) as err:
        open_session(cfg)
    message = str(err.value)
    assert "pyocd pack install mimxrt798sgfob" in message and "--hil-pack" in message
    assert "not recognized" in message  # pyOCD's own words are kept
    assert not any(call[0] == "open" for call in bench.calls)  # the probe was never touched


def test_missing_pack_file_is_a_config_error(cfg, tmp_path):
    with pytest.raises(BoardConfigError, match="is not a file"):
        open_session(cfg.with_overrides({"pyocd.pack": str(tmp_path / "missing.pack")}))


def test_probe_error_on_open_is_clear_and_closes_the_session(monkeypatch, cfg):
    bench = FakeBench(probes=[FakeProbe(UID_A)], open_error=exceptions.ProbeError("LIBUSB_ERROR_BUSY")).install(monkeypatch)
    with pytest.raises(TargetError) as err:
        open_session(cfg)
    assert "LIBUSB_ERROR_BUSY" in str(err.value) and "another debugger" in str(err.value)
    assert bench.sessions[-1].closed


def test_open_that_hangs_times_out(monkeypatch, cfg):
    FakeBench(probes=[FakeProbe(UID_A)], open_delay_s=3).install(monkeypatch)
    start = time.monotonic()
    with pytest.raises(TimeoutExpired, match="no answer from the probe in 0.3 s"):
        open_session(cfg.with_overrides({"pyocd.connect_timeout_s": 0.3}))
    assert time.monotonic() - start < 2


def test_flash_failure_is_retried_once_and_recorded(monkeypatch, cfg, elf):
    bench = FakeBench(probes=[FakeProbe(UID_A)], flash_failures=1).install(monkeypatch)
    report = flash_image(cfg, elf)
    assert report.attempts == 2 and report.retried and report.probe_id == UID_A
    assert len(report.errors) == 1 and "FlashProgramFailure" in report.errors[0] and "0x28004000" in report.errors[0]
    assert report.seconds >= 0
    programs = [c for c in bench.calls if c[0] == "program"]
    assert programs == [("program", UID_A, str(elf))] * 2
    assert bench.calls[-2:] == [("reset", True), ("close", UID_A)]  # left halted at reset, probe released
    assert all(s.closed for s in bench.sessions)


def test_second_flash_failure_raises_with_both_attempts(monkeypatch, cfg, elf):
    bench = FakeBench(probes=[FakeProbe(UID_A)], flash_failures=2).install(monkeypatch)
    with pytest.raises(TargetError) as err:
        flash_image(cfg, elf)
    assert "failed twice" in str(err.value) and "attempt 1" in str(err.value) and "attempt 2" in str(err.value)
    assert err.value.flash_report.attempts == 2
    assert ("reset", True) not in bench.calls and all(s.closed for s in bench.sessions)


def test_clean_flash_takes_one_attempt(monkeypatch, cfg, elf):
    FakeBench(probes=[FakeProbe(UID_A)]).install(monkeypatch)
    report = flash_image(cfg, elf)
    assert report.attempts == 1 and not report.retried and report.errors == []


def test_missing_image_is_named(monkeypatch, cfg, tmp_path):
    FakeBench(probes=[FakeProbe(UID_A)]).install(monkeypatch)
    with pytest.raises(BoardConfigError, match="nothing.elf does not exist"):
        flash_image(cfg, tmp_path / "nothing.elf")


def test_real_pyocd_target_lookup():
    """pyOCD 0.46.0 as installed: no RT7xx target without NXP's pack, LPC55S69 built in."""
    assert target_support("mimxrt798sgfob") is None
    assert target_support("LPC55S69") == "built-in"


def test_real_pyocd_api_seam_and_no_probe_here():
    api = pyocd_flash._pyocd_api()
    assert api.version.startswith("0.46")
    assert issubclass(api.exceptions.FlashProgramFailure, api.exceptions.FlashFailure)
    start = time.monotonic()
    probes = list_probes(api)  # whatever is plugged in here (CI: nothing); it must not block
    assert time.monotonic() - start < 5
    assert all(p.unique_id for p in probes)
