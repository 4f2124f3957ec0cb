"""One key per program: the baseline file a run writes is named as the run's series (the model, `+delegate`
when lowered to one), the verdict says that same key, and the next run of the same test finds it; a
baseline an older et-hil wrote (`+` written `_`) is still found."""

from __future__ import annotations

import shutil
from pathlib import Path

from hil.base import atomic
from hil.regress.judge import JudgeOptions, judge_run
from test_regress_synth import synth_profile

SERIES = "models-ae_factory+neutron-sim"  # `models.py:ae_factory` lowered to the simulated Neutron backend


def _folder(root: Path, name: str, seed: int) -> Path:
    profile = {**synth_profile(seed, model="models-ae_factory"), "delegate": "neutron-sim"}
    atomic.write_json(root / name / "profile.json", profile)
    atomic.write_json(root / name / "manifest.json", {"board": "qemu", "model": "models.py:ae_factory",
                                                      "model_name": "models-ae_factory", "delegate": "neutron-sim"})
    return root / name


def _judge(folder: Path, baseline: Path, *, update: bool = False):
    return judge_run(folder, JudgeOptions(baseline=baseline, baseline_update=update), marker_budget=None,
                     test_passed=True)


def test_a_baseline_written_by_one_run_is_found_by_the_next_under_the_runs_own_key(tmp_path):
    base = tmp_path / "baselines"
    written = _judge(_folder(tmp_path, "night1", 1), base, update=True)
    assert [p.name for p in base.iterdir()] == [f"{SERIES}.json"]
    assert f"{SERIES}: baseline updated: {base / (SERIES + '.json')}" in written.notes[-1]
    verdict = _judge(_folder(tmp_path, "night2", 2), base)
    assert verdict.decision is not None and verdict.decision.status == "pass", verdict.notes + verdict.failures
    text = "\n".join(verdict.notes)
    assert f"{SERIES} against baseline {base / (SERIES + '.json')}" in text
    # both sides are named by the key of the file, never the bare model
    assert f"baseline: 1 run(s), board qemu, model {SERIES}, 10 iterations" in text
    assert f"now: 1 run(s), board qemu, model {SERIES}, 10 iterations" in text


def test_a_baseline_named_the_older_way_is_still_found(tmp_path):
    base = tmp_path / "baselines"
    _judge(_folder(tmp_path, "night1", 1), base, update=True)
    shutil.move(base / f"{SERIES}.json", base / "models-ae_factory_neutron-sim.json")
    verdict = _judge(_folder(tmp_path, "night2", 2), base)
    assert verdict.decision.status == "pass" and "models-ae_factory_neutron-sim.json" in "\n".join(verdict.notes)


def test_a_cpu_only_run_does_not_take_the_delegated_programs_baseline(tmp_path):
    base = tmp_path / "baselines"
    _judge(_folder(tmp_path, "night1", 1), base, update=True)
    cpu = _folder(tmp_path, "cpu", 2)
    atomic.write_json(cpu / "profile.json", {**synth_profile(2, model="models-ae_factory"), "delegate": "none"})
    verdict = _judge(cpu, base)
    assert verdict.decision.status != "pass" and f"no baseline under {base}" in "\n".join(verdict.warnings)
