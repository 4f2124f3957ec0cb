"""A nightly run requires the image its history series was measured on (hil.regress.series_image): the
runtime image when the series' latest passed run is a runtime run, nothing otherwise. The histories are
written by the product's own writer from run folders whose keys are spelled out in timebase_runs.py."""

from __future__ import annotations

from hil.regress import history
from hil.regress.series_image import required_by_history, series_of
from timebase_runs import run_profile


def test_a_runtime_series_requires_the_runtime_image_naming_the_history(tmp_path):
    db = tmp_path / "h.db"
    history.record_run(db, run_profile("runtime", 1), {"written_at": "2026-01-01T00:00:00Z"}, passed=True)
    required = required_by_history(db, "synthnet", "none", "qemu")
    assert required is not None and required.kind == "runtime"
    assert required.reason == (f"the history {db} measured synthnet on qemu with the runtime image "
                               "(runtime-instructions/shift=2); a replay run would not be comparable")


def test_no_history_another_program_or_a_replay_series_requires_nothing(tmp_path):
    db = tmp_path / "h.db"
    assert required_by_history(None, "synthnet", "none", "qemu") is None
    assert required_by_history(db, "synthnet", "none", "qemu") is None  # the file does not exist yet
    history.record_run(db, run_profile("runtime", 1), {"written_at": "2026-01-01T00:00:00Z"}, passed=True)
    assert required_by_history(db, "othernet", "none", "qemu") is None
    assert required_by_history(db, "synthnet", "neutron-sim", "qemu") is None  # synthnet+neutron-sim: no runs
    assert required_by_history(db, "synthnet", "none", "rt700") is None
    history.record_run(db, run_profile("replay", 2), {"written_at": "2026-01-02T00:00:00Z"}, passed=True)
    assert required_by_history(db, "synthnet", "none", "qemu") is None  # the series went on as a replay series


def test_the_series_name_is_the_historys():
    assert series_of("cnn", "none", "qemu") == "cnn"
    assert series_of("cnn", None, "qemu") == "cnn"
    assert series_of("cnn", "neutron-sim", "qemu") == "cnn+neutron-sim"
