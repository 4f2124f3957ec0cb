"""The verdict across runs at its edges, on profiles written by hand with round numbers.

Every figure below is worked out by hand in the comments: the 20% machine-load cut taken exactly, and
the between-run noise of a baseline whose spread is known, judged against one new run (whose own
spread is 0 and must not be the noise).
"""

from __future__ import annotations

import pytest

from hil.regress.compare import compare_runs

NS = {"ticks_per_us": 1000.0, "neutron_ticks_per_us": 1000.0, "follows_clock": False, "unit": "us"}
TICKS = {"ticks_per_us": 324.0, "neutron_ticks_per_us": 250.0, "follows_clock": True, "unit": "us"}


def profile(figures: dict[str, float], *, clock=NS, iterations: int = 3) -> dict:
    """One run: each event takes its figure in every iteration (so its p50, fastest and MAD are exact)."""
    events = [{"name": "Method::execute", "kind": "method", "op_types": [],
               "times_us": [figures.pop("Method::execute")] * iterations}]
    events += [{"name": name, "kind": "cpu_op", "op_types": [f"aten.{name}.default"], "times_us": [us] * iterations}
               for name, us in figures.items()]
    return {"board": "qemu", "model": "hand", "iterations": iterations, "time_scale": dict(clock), "events": events}


# Four large events (each >= 1% of Method::execute) decide a run's overall shift.
BASE = {"Method::execute": 50.0, "a": 5.0, "b": 10.0, "c": 20.0}


def scaled(factor: float) -> dict:
    return profile({k: v * factor for k, v in BASE.items()})


def test_a_new_run_exactly_twenty_percent_slower_as_a_whole_is_still_judged():
    # 6/5 = 12/10 = 24/20 = 1.2 exactly: the shift sits on the cut (<= 1.20 is judged).
    judged = compare_runs([profile(dict(BASE)) for _ in range(3)], [scaled(1.2)])
    assert not judged.disturbed and judged.now_runs == 1
    assert "new run(s) 20% slower as a whole (machine load): every limit widened by as much" in judged.notes
    # Each event +20%, limit = max(5% x B, 0.1% x 50, noise 0) + 20% x B = 25% x B: none is convicted.
    assert {d.verdict for d in judged.deltas} == {"unchanged"}
    # 6.0003/5 = 1.20006: past the cut, not judged.
    past = compare_runs([profile(dict(BASE)) for _ in range(3)],
                        [profile({"Method::execute": 60.0, "a": 6.0003, "b": 12.0006, "c": 24.0012})])
    assert past.disturbed and {d.verdict for d in past.deltas} == {"unjudged"}


def ten_baseline_runs() -> list[dict]:
    """`x` and `y` take 100, 101, ..., 109 us over the ten runs: median 104.5, absolute deviations
    0.5, 0.5, 1.5, 1.5, 2.5, 2.5, 3.5, 3.5, 4.5, 4.5, so MAD = 2.5 and the noise = 3 x 1.4826 x 2.5 = 11.1195 us."""
    return [profile({"Method::execute": 1000.0, "x": 100.0 + i, "y": 100.0 + i}, clock=TICKS) for i in range(10)]


def test_one_new_run_is_judged_by_the_spread_between_baseline_runs():
    # x: +10 us, under the noise (11.1195) though over 5% of 104.5 (5.225): unchanged.
    # y: +12 us, over both: a regression, slower than all ten runs (p = 1/11 <= 0.1).
    now = profile({"Method::execute": 1000.0, "x": 114.5, "y": 116.5}, clock=TICKS)
    comparison = compare_runs(ten_baseline_runs(), [now])
    by = {d.name: d for d in comparison.deltas}
    assert by["x"].noise_us == pytest.approx(11.1195) and by["y"].noise_us == pytest.approx(11.1195)
    assert by["x"].verdict == "unchanged" and by["x"].p_value is None
    assert [d.name for d in comparison.regressions] == ["y"] and by["y"].p_value == pytest.approx(1 / 11)


def test_a_baseline_run_exactly_twenty_percent_slower_than_the_fastest_is_kept():
    from hil.regress.stats import undisturbed

    quiet = {"a": 5.0, "b": 10.0, "c": 20.0}
    # medians of the four runs: 5, 10, 20; the last run's shift 6/5 = 1.2 = the fastest (1.0) x 1.2
    assert undisturbed([quiet] * 3 + [{"a": 6.0, "b": 12.0, "c": 24.0}], "m") == ([0, 1, 2, 3], [1.0] * 3 + [1.2])
    assert undisturbed([quiet] * 3 + [{"a": 6.0003, "b": 12.0006, "c": 24.0012}], "m")[0] == [0, 1, 2]


def test_a_new_run_of_one_iteration_is_not_judged():
    # on a board clock (no machine-load rule), every event twice as slow, but in one iteration only
    comparison = compare_runs([profile(dict(BASE), clock=TICKS) for _ in range(3)],
                              [profile({k: 2 * v for k, v in BASE.items()}, clock=TICKS, iterations=1)])
    # Nothing can decide a doubled event from one iteration against 3 runs of one board clock: "cannot judge"
    # (the gate says how many more baseline runs it needs), never a regression.
    assert {d.verdict for d in comparison.deltas} == {"cannot judge"} and not comparison.has_regression
    # 1 run against K runs reaches p = 1/(K+1) at best: 1/(9+1) <= 0.1 needs 9 baseline runs, 6 more than these 3.
    assert ("cannot judge: 6 more baseline run(s) needed (4 slower event(s) measured in 1 iteration, where the rank "
            "test cannot reach alpha 0.1 yet: Method::execute, a, b, c)") in comparison.notes
