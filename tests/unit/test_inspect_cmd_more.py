"""`hil inspect` of a run folder: the flags that change what it reads (--drift-snr-db, --no-verify).

Truths: thresholds, messages and files written into the test; the run folder is test_inspect_cmd's
(the analysis tests' host-runtime program, listed with hashlib).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from hil.cli.inspect_cmd import inspect_files
from hil.base.errors import InputError
from hil.records.evidence import EvidenceError
from test_inspect_cmd import _args, listing, run_folder  # noqa: F401  (run_folder: the fixture)


def _printed(capsys: pytest.CaptureFixture[str], **given: object) -> dict:
    assert inspect_files(_args(**given)) == 0
    return json.loads(capsys.readouterr().out)


def _rewrite_manifest(folder: Path, *, drop: tuple[str, ...] = (), **changes: object) -> None:
    """The run folder's manifest.json with `changes` set and the keys in `drop` taken out."""
    manifest = json.loads((folder / "manifest.json").read_text())
    manifest.update(changes)
    for key in drop:
        manifest.pop(key, None)
    (folder / "manifest.json").write_text(json.dumps(manifest))


def _as_debug_run(folder: Path, stored_snr_db: float) -> None:
    """Make `folder` a debug-output run: a debug buffer beside the dump, its threshold in the manifest."""
    (folder / "debug.bin").write_bytes(bytes(64))
    _rewrite_manifest(folder, drift_snr_db=stored_snr_db, files=listing(folder))


def test_a_debug_run_is_judged_at_the_threshold_asked_for_else_at_its_own(run_folder: Path,  # noqa: F811
                                                                             capsys: pytest.CaptureFixture[str]) -> None:
    _as_debug_run(run_folder, stored_snr_db=20.0)
    assert _printed(capsys, path=run_folder)["drift"]["threshold_snr_db"] == 20.0
    assert _printed(capsys, path=run_folder, drift_snr_db=7.5)["drift"]["threshold_snr_db"] == 7.5


def test_a_debug_run_whose_dump_logged_no_tensor_says_why_beside_the_threshold(run_folder: Path,  # noqa: F811
                                                                               capsys: pytest.CaptureFixture[str]) -> None:
    """The analysis program ran without a debug buffer: the section names the cause, the profile stands."""
    _as_debug_run(run_folder, stored_snr_db=20.0)
    printed = _printed(capsys, path=run_folder, drift_snr_db=7.5)
    drift = printed["drift"]
    assert "cannot compute the numeric gap" in drift["note"] and drift["operators"] == []
    assert drift["first_drift"] is None and drift["debug_buffer"]["used_bytes"] == 64  # bytes(64) written above
    assert [e for e in printed["events"] if e["kind"] == "method"]


@pytest.mark.parametrize("threshold", [math.nan, math.inf, -math.inf])
def test_a_drift_threshold_that_is_no_finite_number_is_refused_naming_the_flag(run_folder: Path,  # noqa: F811
                                                                               threshold: float) -> None:
    with pytest.raises(InputError) as refused:
        inspect_files(_args(path=run_folder, drift_snr_db=threshold))
    assert str(refused.value) == f"--drift-snr-db must be a finite number, not {threshold!r}"


def _tamper_console(folder: Path) -> None:
    """A console log listed in the manifest with 9 us, then changed to 7 us behind its back."""
    (folder / "serial.log").write_text("Inference time: 9 us\r\n")
    _rewrite_manifest(folder, files=listing(folder))
    (folder / "serial.log").write_text("Inference time: 7 us\r\n")


def test_a_changed_file_is_refused_unless_told_not_to_verify(run_folder: Path,  # noqa: F811
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    _tamper_console(run_folder)
    changed = r"serial\.log: sha256 [0-9a-f]{64} differs from the [0-9a-f]{64} .*manifest\.json records: the file changed after the run"
    with pytest.raises(EvidenceError, match=changed):
        inspect_files(_args(path=run_folder))
    printed = _printed(capsys, path=run_folder, no_verify=True)
    assert printed["console"]["inference_times_us"] == [7]  # the file as it is now, not as listed
    assert printed["warnings"][0] == (f"{run_folder}: files not verified against manifest.json (--no-verify): "
                                      "the figures may not be the run's")


def test_the_outputs_check_recorded_by_the_run_is_in_its_profile_again(run_folder: Path,  # noqa: F811
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    """No dump holds the outputs' check: the manifest's, as written here, comes back under `numerics`."""
    assert "numerics" not in _printed(capsys, path=run_folder)
    check = {"status": "ok", "outputs": []}
    _rewrite_manifest(run_folder, numerics=check)
    assert _printed(capsys, path=run_folder)["numerics"] == check


def test_a_manifest_without_a_warmup_keeps_every_run(run_folder: Path,  # noqa: F811
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    _rewrite_manifest(run_folder, drop=("warmup",))
    printed = _printed(capsys, path=run_folder)
    (method,) = [e for e in printed["events"] if e["kind"] == "method"]
    assert len(method["times_us"]) == 3  # the program's 3 runs (test_inspect_cmd.run_folder), none dropped
