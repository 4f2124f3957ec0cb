"""Statistics and warm-up: checked against the standard library and against hand-made data."""

from __future__ import annotations

import random
import statistics

import pytest

from hil.records.statistics import mad, percentile, summarize
from hil.base.errors import AnalysisError
from hil.regress.stats import MAD_TO_SIGMA, add_statistics, drop_warmup, event_fastest
from test_regress_synth import synth_profile


def test_percentiles_match_the_standard_library():
    rng = random.Random(3)
    for n in (1, 2, 5, 10, 101):
        values = [rng.uniform(1, 100) for _ in range(n)]
        assert percentile(values, 50) == pytest.approx(statistics.median(values))
        if n > 1:
            # 'inclusive' quantiles use the same linear interpolation
            assert percentile(values, 90) == pytest.approx(statistics.quantiles(values, n=10, method="inclusive")[8])
        assert percentile(values, 0) == min(values) and percentile(values, 100) == max(values)


def test_mad_estimates_sigma_of_normal_noise_and_ignores_one_outlier():
    rng = random.Random(11)
    values = [100 + rng.gauss(0, 2.0) for _ in range(4001)]
    assert MAD_TO_SIGMA * mad(values) == pytest.approx(2.0, rel=0.05)
    spiky = values[:20] + [10_000.0]
    assert mad(spiky) < 5.0  # one preempted iteration does not blow up the spread
    assert mad([5.0]) == 0.0


def test_add_statistics_fills_every_event_and_is_idempotent():
    profile = synth_profile(4)
    for e in profile["events"]:
        e.pop("p50_us")
    filled = add_statistics(profile)
    for e in filled["events"]:
        assert e["min_us"] <= e["p50_us"] <= e["p90_us"] <= e["max_us"]
        assert e["p50_us"] == pytest.approx(statistics.median(e["times_us"]))
        assert e["mad_us"] >= 0
    again = add_statistics(filled)
    assert again == filled and "p50_us" not in profile["events"][0], "a new profile; the input is not modified"
    assert summarize([]) == {}


def test_drop_warmup_removes_the_cold_first_iteration():
    cold = synth_profile(5, iterations=6, warmup_factor=10.0)  # first iteration 10x slower
    trimmed = drop_warmup(cold, 1)
    assert trimmed["iterations"] == 5 and trimmed["warmup_iterations"] == 1
    assert cold["iterations"] == 6, "the input is not modified"
    for before, after in zip(cold["events"], trimmed["events"]):
        assert after["times_us"] == before["times_us"][1:]
        assert after["max_us"] < 2 * after["min_us"], "no cold iteration left"
    method = trimmed["events"][0]
    assert trimmed["totals_us"]["method_execute"] == pytest.approx(statistics.median(method["times_us"]))
    assert 0 < trimmed["npu_fraction"] < 1
    assert drop_warmup(trimmed, 1)["iterations"] == 5, "a trimmed profile is not trimmed twice"


def test_drop_warmup_refuses_to_drop_every_iteration():
    with pytest.raises(AnalysisError, match="synthnet.*warm-up 3 leaves none of its 3 iterations"):
        drop_warmup(synth_profile(1, iterations=3), 3)


def test_no_warmup_gives_an_independent_copy_and_trims_dispatch_too():
    profile = synth_profile(6, iterations=4)
    profile["events"][1]["call_overhead_us"] = [1.0, 2.0, 3.0, 4.0]
    same = drop_warmup(profile, 0)
    same["events"][0]["times_us"].append(1.0)
    assert len(profile["events"][0]["times_us"]) == 4
    assert drop_warmup(profile, 1)["events"][1]["call_overhead_us"] == [2.0, 3.0, 4.0]
    with pytest.raises(ValueError, match="warm-up must be >= 0, got -1"):
        drop_warmup(profile, -1)
    with pytest.raises(AnalysisError, match=r"on board 'qemu': warm-up 4 leaves none of its 4 iterations; "
                                            r"run at least 5 \(--hil-iterations\)"):
        drop_warmup(profile, 4)
    unknown = {k: v for k, v in profile.items() if k != "iterations"}
    assert "iterations" not in drop_warmup(unknown, 1) and len(drop_warmup(unknown, 1)["events"][0]["times_us"]) == 3


def test_the_fastest_iteration_comes_from_the_times_else_from_a_history_row():
    assert event_fastest({"times_us": [4.0, 2.0, 9.0], "min_us": 1.0}) == 2.0
    assert event_fastest({"min_us": 3.0, "p50_us": 5.0}) == 3.0  # a run rebuilt from the history database
    assert event_fastest({"p50_us": 5.0}) == 5.0 and event_fastest({}) == 0.0
