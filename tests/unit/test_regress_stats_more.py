"""Statistics across runs on hand-made numbers: a run's overall shift, the quiet cluster of baseline
runs, and the one-sided rank test's p-value, each worked out by hand in a comment."""

from __future__ import annotations

import pytest

from hil.regress.stats import median, rank_p_value, run_shift, spread, undisturbed

METHOD = "method:Method::execute#0"


def _scaled(factor: float) -> dict[str, float]:
    """One run of a program with three large events (100, 200, 400 us), every one slowed by `factor`."""
    return {METHOD: 1000.0 * factor, "a": 100.0 * factor, "b": 200.0 * factor, "c": 400.0 * factor}


def test_median_and_robust_sigma_by_hand():
    assert median([3.0, 1.0, 2.0]) == 2.0 and median([1.0, 2.0, 3.0, 4.0]) == 2.5
    # median 3, absolute deviations 2, 1, 0, 1, 97 -> MAD 1 -> sigma 1.4826 x 1; the outlier does not count
    assert spread([1.0, 2.0, 3.0, 4.0, 100.0]) == pytest.approx(1.4826)
    assert spread([5.0]) == 0.0


def test_a_runs_shift_is_the_median_ratio_of_its_large_events_only():
    centers = {METHOD: 1000.0, "a": 100.0, "b": 200.0, "c": 300.0, "tiny": 5.0}
    run = {METHOD: 1200.0, "a": 110.0, "b": 240.0, "c": 300.0, "tiny": 50.0}
    # ratios a 1.1, b 1.2, c 1.0 -> median 1.1; "tiny" (5 us < 1% of 1000 us) and the method itself are left out
    # (with either of them, ratio 10 or 1.2, the median of four would be 1.15)
    assert run_shift(run, centers, METHOD) == pytest.approx(1.1)
    # an event of exactly 1% of the whole counts: ratios 1.1, 1.2, 1.0, 3.0 -> median 1.15
    assert run_shift({**run, "edge": 30.0}, {**centers, "edge": 10.0}, METHOD) == pytest.approx(1.15)


def test_with_fewer_than_three_large_events_measured_no_shift_is_told():
    centers = {METHOD: 1000.0, "a": 100.0, "b": 200.0, "c": 300.0}
    assert run_shift({"a": 150.0, "b": 300.0}, centers, METHOD) == 1.0  # "c" not in this run: two events left
    # a zero center is never divided by: without a method, a, b and d decide (1.5, 1.5, 2.0 -> 1.5)
    assert run_shift({"a": 150.0, "b": 300.0, "z": 7.0, "d": 600.0}, {"a": 100.0, "b": 200.0, "z": 0.0, "d": 300.0},
                     METHOD) == pytest.approx(1.5)


def test_without_a_method_total_every_measured_event_counts_however_short():
    # no Method::execute to take 1% of: events of 4, 6 and 8 ns all decide, each twice as slow -> 2.0
    assert run_shift({"a": 0.008, "b": 0.012, "c": 0.016}, {"a": 0.004, "b": 0.006, "c": 0.008}, METHOD) == pytest.approx(2.0)


def test_the_quiet_cluster_keeps_runs_within_20_percent_of_the_fastest():
    runs = [_scaled(1.0), _scaled(1.0), _scaled(1.02), _scaled(1.5)]
    # centers: a = median(100, 100, 102, 150) = 101, likewise b 202, c 404: shifts 100/101, 100/101, 102/101, 150/101;
    # 150/101 = 1.485 is above 1.2 x 100/101 = 1.188
    keep, shifts = undisturbed(runs, METHOD)
    assert keep == [0, 1, 2]
    assert shifts == pytest.approx([100 / 101, 100 / 101, 102 / 101, 150 / 101])


def test_a_run_exactly_20_percent_slower_than_the_fastest_is_still_quiet():
    keep, shifts = undisturbed([_scaled(1.0), _scaled(1.0), _scaled(1.0), _scaled(1.2)], METHOD)
    assert shifts == pytest.approx([1.0, 1.0, 1.0, 1.2]) and keep == [0, 1, 2, 3]


def test_one_operator_twice_as_slow_is_a_program_change_and_its_run_stays_in_the_cluster():
    program = {METHOD: 1000.0, "a": 100.0, "b": 100.0, "c": 700.0}
    changed = {METHOD: 1700.0, "a": 100.0, "b": 100.0, "c": 1400.0}  # c doubled: the method adds its 700 us too
    # centers are the first runs' figures; ratios of the changed run a 1, b 1, c 2 -> median 1.0 (the method's
    # own 1.7 is not one of them: with it the median of four would be 1.35, out of the cluster)
    keep, shifts = undisturbed([program, program, program, changed], METHOD)
    assert shifts == [1.0, 1.0, 1.0, 1.0] and keep == [0, 1, 2, 3]


def test_with_fewer_than_three_quiet_runs_every_run_is_kept():
    # two runs at 1.0, two at 1.5: centers are 125, 250, 500 (medians of 100, 100, 150, 150 ...), shifts 0.8 and 1.2
    keep, shifts = undisturbed([_scaled(1.0), _scaled(1.5), _scaled(1.0), _scaled(1.5)], METHOD)
    assert shifts == pytest.approx([0.8, 1.2, 0.8, 1.2]) and keep == [0, 1, 2, 3]


def test_the_rank_p_value_is_the_one_sided_chance_of_ranking_this_high():
    # one new run above all 3 baseline runs: 1 of the C(4, 1) = 4 equally likely orders -> 0.25
    assert rank_p_value([5.0], [1.0, 2.0, 3.0]) == pytest.approx(0.25)
    # two new runs above all 3: 1 / C(5, 2) = 0.1
    assert rank_p_value([4.0, 5.0], [1.0, 2.0, 3.0]) == pytest.approx(0.1)
    # below every baseline run: every order ranks at least this high -> 1
    assert rank_p_value([0.5], [1.0, 2.0, 3.0]) == pytest.approx(1.0)
    assert rank_p_value([], [1.0]) == 1.0 and rank_p_value([1.0], []) == 1.0
