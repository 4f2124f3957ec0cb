"""No blind verdict: `hil compare` and the pytest gate decide alike on the same runs, a large slowdown
fails with 3 baseline runs (where the rank test cannot reach alpha) and with a baseline file alone,
and what nothing can decide is said as "cannot judge" and fails under strict mode."""

from __future__ import annotations

import contextlib
import io
import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from hil.base import atomic
from hil.cli.main import main
from hil.regress import history
from hil.regress.judge import JudgeOptions, judge_run
from hil.regress.power import baseline_runs_needed, best_p_value
from test_regress_synth import synth_profile

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
KERNEL = ("npu_kernel", "1", 0)


def _folder(root: Path, name: str, profile: dict) -> Path:
    atomic.write_json(root / name / "profile.json", profile)
    atomic.write_json(root / name / "manifest.json", {"board": "qemu", "model": "synthnet"})
    return root / name


def _cli(*args: object) -> tuple[int, str]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        code = main([str(a) for a in args])
    return code, out.getvalue()


def test_the_best_p_value_is_one_ordering_of_all_the_runs():
    # hand counts: 1 new run among 3 baseline runs has 4 places, 2 among 5 have C(7, 2) = 21 orderings;
    # 2 new runs reach 0.1 with 3 baseline runs (C(5, 2) = 10), 3 new runs with 2 (C(5, 3) = 10)
    assert best_p_value(3, 1) == pytest.approx(0.25) and best_p_value(5, 2) == pytest.approx(1 / 21)
    assert best_p_value(0, 1) == 1.0 and best_p_value(3, 0) == 1.0
    assert baseline_runs_needed(1, 0.1) == 9 and baseline_runs_needed(2, 0.1) == 3 and baseline_runs_needed(3, 0.1) == 2
    assert baseline_runs_needed(3, 0.1, at_least=3) == 3 and baseline_runs_needed(1, 0.05) == 19


# (seed of the new run, slow factor of kernel 1, iterations): unchanged, within the tolerance, just past
# it, the +140% kernel of a widened convolution, and runs of one iteration that cannot be judged.
TRIPLES = [(50, 1.0, 10), (51, 1.03, 10), (52, 1.12, 10), (53, 2.4, 10), (54, 1.0, 5), (55, 2.4, 1), (56, 1.0, 1)]


@pytest.mark.parametrize("strict", [False, True])
def test_cli_and_gate_give_the_same_verdict_on_seeded_run_triples(tmp_path, strict):
    seen = set()
    for index, (seed, factor, iterations) in enumerate(TRIPLES):
        root = tmp_path / str(index)
        base = [_folder(root, f"b{i}", synth_profile(seed * 10 + i, iterations=iterations)) for i in range(3)]
        db = root / "h.db"
        for i, folder in enumerate(base):
            history.record_run(db, synth_profile(seed * 10 + i, iterations=iterations),
                               {"written_at": f"2026-01-0{i + 1}T00:00:00Z"}, passed=True)
        now = _folder(root, "now", synth_profile(seed, iterations=iterations, slow={KERNEL: factor}))
        code, out = _cli("compare", *base, now, *(["--strict"] if strict else []))
        verdict = judge_run(now, JudgeOptions(baseline=root / "none", history=db, strict=strict),
                            marker_budget=None, test_passed=True)
        assert code in (0, 1) and bool(verdict.failures) == (code == 1), (seed, factor, iterations, out, verdict.failures)
        assert verdict.decision.reason in out, (verdict.decision.reason, out)
        seen.add(verdict.decision.status)
    assert seen == {"pass", "regression", "cannot judge"}


def test_a_kernel_140_percent_slower_fails_against_three_history_runs(tmp_path):
    db = tmp_path / "h.db"
    for seed in range(3):
        history.record_run(db, synth_profile(seed), {"written_at": f"2026-01-0{seed + 1}T00:00:00Z"}, passed=True)
    verdict = judge_run(_folder(tmp_path, "now", synth_profile(9, slow={KERNEL: 2.4})),
                        JudgeOptions(baseline=tmp_path / "baselines", history=db), marker_budget=None, test_passed=True)
    (failure,) = verdict.failures
    assert "against the last 3 passed run(s) in history" in failure and "first call 0 / kernel 1: convolution +14" in failure
    assert "reach p >= 0.25 at best, above alpha 0.1" in failure
    assert ("hil.synthnet.verdict", "regression") in verdict.properties


def test_one_iteration_runs_cannot_be_judged_and_strict_mode_fails_them(tmp_path):
    db = tmp_path / "h.db"
    for seed in range(3):
        history.record_run(db, synth_profile(seed, iterations=1), {"written_at": f"2026-01-0{seed + 1}"}, passed=True)
    now = _folder(tmp_path, "now", synth_profile(9, iterations=1, slow={KERNEL: 2.4}))
    strict_db = tmp_path / "strict.db"  # the same 3 runs: the lenient judgement adds its run to its own history
    shutil.copy(db, strict_db)
    lenient = judge_run(now, JudgeOptions(baseline=tmp_path / "b", history=db), marker_budget=None, test_passed=True)
    assert lenient.failures == [] and lenient.decision.status == "cannot judge"
    assert lenient.warnings == ["synthnet against the last 3 passed run(s) in history " + str(db)
                                + ": cannot judge: 6 more baseline run(s) needed (call 0 / kernel 1: convolution, DELEGATE_CALL, Method::execute slower)"]
    assert ("hil.synthnet.verdict", "cannot judge") in lenient.properties
    assert ("hil.synthnet.baseline_runs_needed", "6") in lenient.properties
    strict = judge_run(now, JudgeOptions(baseline=tmp_path / "b", history=strict_db, strict=True), marker_budget=None,
                       test_passed=True)
    (failure,) = strict.failures
    assert "cannot judge: 6 more baseline run(s) needed" in failure and "--hil-strict" in failure
    conn = history.open_existing(db)
    try:
        stored = history.read_runs(conn)[-1]["comparison"]
    finally:
        conn.close()
    assert stored["decision"]["status"] == "cannot judge" and stored["decision"]["runs_needed"] == 6


SUITE = '''
import os, sys
import pytest
from pathlib import Path
from hil.base import atomic
sys.path.insert(0, {here!r})
from test_regress_synth import synth_profile

@pytest.mark.device  # an et-hil test: its figures go to the JUnit XML
def test_widened_convolution(request):
    folder = Path(os.environ["RUNS"]) / "now"
    atomic.write_json(folder / "profile.json", synth_profile(seed=9, slow={{("npu_kernel", "1", 0): 2.4}}))
    atomic.write_json(folder / "manifest.json", {{"board": "qemu", "model": "synthnet"}})
    request.node.user_properties.append(("hil_artifacts", str(folder)))
'''


def _session(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "test_suite.py", *args],
        cwd=tmp_path, capture_output=True, text=True, timeout=300, env={**os.environ, "RUNS": str(tmp_path / "runs"), "PYTHONPATH": str(REPO)})


def test_the_new_project_case_fails_its_suite_with_three_history_runs_and_with_a_baseline_file_only(tmp_path):
    (tmp_path / "test_suite.py").write_text(SUITE.format(here=str(HERE)))
    db = tmp_path / "history.db"
    for seed in range(3):
        history.record_run(db, synth_profile(seed), {"written_at": f"2026-01-0{seed + 1}T00:00:00Z"}, passed=True)
    three = _session(tmp_path, "--hil-history", str(db), "--junitxml=three.xml")  # the history gates by itself
    assert three.returncode == 1, three.stdout + three.stderr
    assert "performance regression" in three.stdout and "first call 0 / kernel 1: convolution +14" in three.stdout
    props = {p.get("name"): p.get("value") for p in ET.parse(tmp_path / "three.xml").getroot().iter("property")}
    assert "regression" in props.values()

    atomic.write_json(tmp_path / "baselines" / "qemu" / "synthnet.json",
                      {"schema": "et-hil/baseline/1", "provenance": {}, "profile": synth_profile(0)})
    file_only = _session(tmp_path, "--hil-baseline", "baselines/qemu")
    assert file_only.returncode == 1, file_only.stdout + file_only.stderr
    assert "against baseline" in file_only.stdout and "first call 0 / kernel 1: convolution +14" in file_only.stdout


def test_a_baseline_path_that_does_not_exist_is_refused_and_an_empty_one_is_said_under_q_and_fails_under_strict(tmp_path):
    (tmp_path / "test_suite.py").write_text(SUITE.format(here=str(HERE)))
    missing = _session(tmp_path, "--hil-baseline", "baselines/qemu")
    assert missing.returncode == 4, missing.stdout + missing.stderr  # pytest's usage error, before any test
    assert "--hil-baseline baselines/qemu: no such file or folder" in missing.stderr
    assert not (tmp_path / "runs").exists()  # refused before the test ran
    (tmp_path / "baselines" / "qemu").mkdir(parents=True)
    quiet = _session(tmp_path, "--hil-baseline", "baselines/qemu")
    assert quiet.returncode == 0, quiet.stdout + quiet.stderr
    assert "cannot judge: no baseline under baselines/qemu" in quiet.stdout  # a pytest warning, shown under -q
    assert ("test_suite.py::test_widened_convolution: synthnet on qemu (simulated-ticks/cpu=324MHz/npu=250MHz): "
            "not judged: cannot judge: no baseline under baselines/qemu") in quiet.stdout  # the terminal summary
    strict = _session(tmp_path, "--hil-baseline", "baselines/qemu", "--hil-strict")
    assert strict.returncode == 1 and "cannot judge: no baseline under baselines/qemu" in strict.stdout
    nothing = _session(tmp_path, "--hil-strict")
    assert nothing.returncode == 4 and "nothing judges runs without --hil-baseline PATH or --hil-history DB" in nothing.stderr
