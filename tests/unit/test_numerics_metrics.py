"""hil.numerics.metrics, budget and gate against figures worked out by hand (each stated beside its fixture).

Fixture: target a = [1, 2, 3, 4], reference r = [1, 2, 3, 5]:
  error = [0, 0, 0, -1]; max abs = 1; peak |r| = 5 -> max rel = 0.2
  sum r^2 = 1 + 4 + 9 + 25 = 39; sum e^2 = 1 -> SNR = 10 log10(39) = 15.910646070264991 dB
  a.r = 1 + 4 + 9 + 20 = 34; |a| = sqrt(30), |r| = sqrt(39) -> cosine = 34 / sqrt(1170) = 34 / 34.20526 = 0.99399909
"""

from __future__ import annotations

import math

import pytest
import torch

from hil.numerics.budget import numerics_violations
from hil.numerics.gate import snr_drop
from hil.numerics.metrics import compare, top1_agreement, worst

A = torch.tensor([[1.0, 2.0, 3.0, 4.0]])
R = torch.tensor([[1.0, 2.0, 3.0, 5.0]])


def test_figures_of_a_hand_worked_pair() -> None:
    fig = compare(A, R)
    assert fig["max_abs_error"] == 1.0
    assert fig["max_rel_error"] == pytest.approx(0.2)
    assert fig["snr_db"] == pytest.approx(15.910646070264991, abs=1e-12)
    assert fig["cosine"] == pytest.approx(0.9939990885, abs=1e-9)
    assert fig["bit_exact"] is False
    assert fig["top1_agreement"] == 1.0  # argmax is element 3 in both


def test_identical_outputs_are_bit_exact_with_no_finite_snr() -> None:
    fig = compare(R, R.clone())
    assert fig == {"max_abs_error": 0.0, "max_rel_error": 0.0, "snr_db": None, "cosine": 1.0, "bit_exact": True,
                   "top1_agreement": 1.0}


def test_top1_counts_rows_whose_largest_class_agrees() -> None:
    target = torch.tensor([[0.1, 0.9], [0.8, 0.2], [0.3, 0.7], [0.6, 0.4]])
    ref = torch.tensor([[0.2, 0.8], [0.1, 0.9], [0.4, 0.6], [0.9, 0.1]])  # row 1 disagrees: 3 of 4
    assert top1_agreement(target, ref) == 0.75
    assert top1_agreement(torch.ones(4), torch.ones(4)) is None  # not a [N, C] classifier output


def test_zero_reference_and_nan_never_pass_as_good() -> None:
    fig = compare(torch.tensor([1.0, 0.0]), torch.zeros(2))
    assert fig["cosine"] == 0.0 and fig["snr_db"] < -2900  # 10 log10(1e-300 / 1) = -3000 dB
    nan = compare(torch.tensor([math.nan, 1.0]), torch.tensor([1.0, 1.0]))
    assert nan["bit_exact"] is False and nan["snr_db"] is None and nan["max_abs_error"] is None
    assert nan.get("non_finite") is True
    assert worst([compare(A, R), nan])["snr_db"] is None  # the NaN output, not the good one


def test_worst_takes_the_largest_error_and_the_lowest_snr() -> None:
    close = compare(torch.tensor([1.0, 2.0, 3.0, 5.5]), R[0])  # error 0.5: SNR 10 log10(39 / 0.25) = 21.93 dB
    both = worst([compare(A, R), close, compare(R, R)])
    assert both["max_abs_error"] == 1.0
    assert both["snr_db"] == pytest.approx(15.910646070264991)
    assert both["bit_exact"] is False


def _section(snr: float | None, max_abs: float, exact: bool = False) -> dict:
    return {"status": "computed", "vs_eager": {"snr_db": snr, "max_abs_error": max_abs, "bit_exact": exact, "cosine": 0.9}}


def test_budget_limits_break_with_the_numbers_and_on_outputs_not_computed() -> None:
    found = numerics_violations(_section(15.9, 1.0), snr_db_min=40, max_abs_error=0.5)
    assert [(what, measured, limit) for what, measured, limit, _, _ in found] == [
        ("output SNR vs eager PyTorch (min)", 15.9, 40), ("output max abs error vs eager PyTorch", 1.0, 0.5)]
    assert numerics_violations(_section(None, 0.0, exact=True), snr_db_min=200, max_abs_error=0.0) == []
    skipped = numerics_violations({"status": "not computed", "reason": "simulated NPU"}, snr_db_min=40, max_abs_error=None)
    assert skipped[0][1] is None and "simulated NPU" in skipped[0][4]


def _profile(snr: float | None, exact: bool = False) -> dict:
    return {"numerics": _section(snr, 0.0, exact)}


def test_the_gate_flags_an_snr_drop_below_rounding_and_nothing_else() -> None:
    assert "from 140.0 dB to 35.0 dB" in (snr_drop([_profile(140.0)], [_profile(35.0)]) or "")
    assert "from bit-exact to 60.0 dB" in (snr_drop([_profile(None, exact=True)], [_profile(60.0)]) or "")
    assert snr_drop([_profile(142.2)], [_profile(140.0)]) is None  # both at float rounding's level
    assert snr_drop([_profile(None, exact=True)], [_profile(None, exact=True)]) is None
    assert snr_drop([_profile(40.0)], [_profile(39.5)]) is None  # within the 1 dB allowed
    assert snr_drop([{"numerics": {"status": "not computed"}}], [_profile(3.0)]) is None  # nothing to judge against


def _run_profile(snr: float | None, exact: bool = False) -> dict:
    """A profile of one event (the same time on every run), with its outputs' SNR against eager PyTorch."""
    event = {"name": "Method::execute", "kind": "method", "op_types": [], "times_us": [100.0] * 5, "p50_us": 100.0}
    return {"board": "qemu", "model": "cifar10", "iterations": 5, "time_scale": {"ticks_per_us": 20.0},
            "firmware": "runtime", "time_base": {"kind": "emulated instructions", "icount_shift": 2},
            "events": [event], "totals_us": {"method_execute": 100.0}, **_profile(snr, exact)}


def test_the_history_keeps_the_snr_and_the_nightly_gate_fails_on_its_drop(tmp_path) -> None:
    from hil.regress import history
    from hil.regress.compare import compare_runs
    from hil.regress.gate import decide
    from hil.regress.timebase import TimeBase

    db = tmp_path / "history.db"
    for _ in range(3):
        history.record_run(db, _run_profile(140.0), passed=True)
    baselines = history.recent_runs(db, "cifar10", "qemu", TimeBase.parse("runtime-instructions/shift=2"), 3).profiles
    assert [b["numerics"]["vs_eager"]["snr_db"] for b in baselines] == [140.0, 140.0, 140.0]
    dropped = decide(compare_runs(baselines, [_run_profile(35.0)]))
    assert dropped.failed and dropped.reason == (
        "regression: output SNR vs eager PyTorch dropped from 140.0 dB to 35.0 dB (more than 1 dB)")
    same = decide(compare_runs(baselines, [_run_profile(139.0)]))
    assert not same.failed, same.reason  # no time changed and the SNR stays at float rounding's level
