"""The rank test's p-values are exact, ties included, and never below the floor the notes state.

Every p-value here is worked out by hand in the comments, by listing the C(K + n, n) equally likely
assignments of the pooled figures to the new runs; tie patterns beyond hand size are checked against
scipy's own exhaustive permutation test. The QEMU runtime board's instruction counts tie exactly, which
is where the normal approximation printed p-values no ordering of the runs can produce (issue 27).
"""

from __future__ import annotations

import random
import re

import numpy as np
import pytest
from scipy.stats import permutation_test, rankdata

from hil.regress.compare import compare_runs, format_comparison
from hil.regress.exact_rank import best_p_value, p_text, rank_p_value, tail_count
from hil.regress.gate import decide
from test_regress_boundaries import TICKS, profile


def test_one_run_above_three_tied_runs_is_one_assignment_in_four():
    # pooled 100, 100, 100, 110: the new run is the 110 in 1 of the 4 assignments (rank sum 4), a 100 in
    # the other 3 (mid-rank 2): 1 of 4 at least as high -> 1/4
    assert tail_count([110.0], [100.0] * 3) == 1
    assert rank_p_value([110.0], [100.0] * 3) == 0.25


def test_one_run_above_seven_distinct_runs_is_one_in_eight():
    # ranks 1..8, the new run holds rank 8: only the assignment that gives it rank 8 -> 1/8
    assert rank_p_value([110.0], [100.0, 101.0, 102.0, 103.0, 104.0, 105.0, 106.0]) == 0.125


def test_the_issues_eight_and_ten_tied_runs_give_one_in_nine_and_one_in_eleven():
    # One run above 8 (10) baseline runs is the slowest of 9 (11) in 1 assignment of 9 (11), however the
    # baseline runs tie among themselves. The normal approximation printed 0.0067 and 0.0022 here.
    assert rank_p_value([110.0], [100.0] * 8) == pytest.approx(1 / 9)
    assert rank_p_value([110.0], [100.0] * 4 + [105.0] * 4) == pytest.approx(1 / 9)
    assert rank_p_value([110.0], [100.0] * 10) == pytest.approx(1 / 11)
    assert tail_count([110.0], [100.0] * 10) == 1


def test_a_new_run_tied_with_a_baseline_run_counts_both_as_high():
    # pooled 100a 100b 110a 110b, one of them the new run: as a 100, U = 0 below + 1/2 tie = 0.5; as a
    # 110, U = 2 below + 1/2 tie = 2.5 (observed). 2 of the 4 assignments reach 2.5 -> 1/2
    assert tail_count([110.0], [100.0, 100.0, 110.0]) == 2
    assert rank_p_value([110.0], [100.0, 100.0, 110.0]) == 0.5


def test_two_new_runs_against_four_by_all_fifteen_assignments():
    # pooled 10 | 20 20 20 | 30 | 40 (b c d the 20s) with mid-ranks 1 | 3 3 3 | 5 | 6; new runs 20 and 40: 3 + 6 = 9.
    # The 15 pairs: a+b a+c a+d 4, a+e 6, a+f 7, b+c b+d c+d 6, b+e c+e d+e 8, b+f c+f d+f 9, e+f 11
    # -> 4 pairs reach 9: p = 4/15
    assert tail_count([20.0, 40.0], [10.0, 20.0, 20.0, 30.0]) == 4
    assert rank_p_value([20.0, 40.0], [10.0, 20.0, 20.0, 30.0]) == pytest.approx(4 / 15)
    # no ties: ranks 1..6, new runs hold 4 and 6 (sum 10); pairs reaching 10: {4,6} and {5,6} -> 2/15
    assert rank_p_value([4.0, 6.0], [1.0, 2.0, 3.0, 5.0]) == pytest.approx(2 / 15)


def test_tied_figures_share_the_mean_of_their_ranks():
    # new 100 and 120 against three 110s: a=100 | b c d=110 | e=120, mid-ranks 1 | 3 3 3 | 5, observed 1 + 5 = 6.
    # The 10 pairs: a+b a+c a+d 4, a+e 6, b+c b+d c+d 6, b+e c+e d+e 8 -> 7 reach 6: p = 7/10. (Giving the
    # 110s their lowest rank, 2, would make b+c 4 and count only 4.)
    assert tail_count([100.0, 120.0], [110.0] * 3) == 7
    # new 110 110 against 100 100 120: a b=100 | c d=110 | e=120, mid-ranks 1.5 | 3.5 | 5, observed 7.
    # Pairs: a+b 3, a+c a+d b+c b+d 5, a+e b+e 6.5, c+d 7, c+e d+e 8.5 -> 3 reach 7: p = 3/10
    assert rank_p_value([110.0, 110.0], [100.0, 100.0, 120.0]) == pytest.approx(3 / 10)


def test_runs_all_tied_or_below_give_one():
    # every figure 100: every assignment has the same rank sum, all 4 reach it
    assert tail_count([100.0], [100.0] * 3) == 4 and rank_p_value([100.0], [100.0] * 3) == 1.0
    # two runs below all three: C(5, 2) = 10 assignments, every one at least as high
    assert tail_count([0.0, 1.0], [5.0, 6.0, 7.0]) == 10


def test_the_floor_is_one_assignment_and_prints_as_the_table_does():
    assert best_p_value(6, 1) == pytest.approx(1 / 7) and best_p_value(8, 1) == pytest.approx(1 / 9)
    assert best_p_value(4, 2) == pytest.approx(1 / 15) and best_p_value(10, 3) == pytest.approx(1 / 286)
    assert best_p_value(0, 2) == 1.0 and best_p_value(3, 0) == 1.0
    # 1/7 = 0.142857, 1/11 = 0.090909, 1/286 = 0.0034965, 1/4 = 0.25
    assert [p_text(p) for p in (1 / 7, 1 / 11, 1 / 286, 0.25)] == ["0.143", "0.0909", "0.0035", "0.25"]


def test_no_tie_pattern_goes_below_the_floor_and_only_a_clean_sweep_reaches_it():
    """Every figure pattern over {0, 1, 2} for K <= 4, n <= 2: p >= 1 / C(K + n, n), in print too, and p is the
    floor exactly when every new run is above every baseline run (else swapping a baseline run at or above
    a new run with it gives a second assignment at least as high)."""
    for k in range(1, 5):
        for n in range(1, 3):
            floor = best_p_value(k, n)
            for code in range(3 ** (k + n)):
                figures = [float(code // 3 ** i % 3) for i in range(k + n)]
                now, baseline = figures[:n], figures[n:]
                p = rank_p_value(now, baseline)
                assert p >= floor and float(p_text(p)) >= float(p_text(floor)), (now, baseline)
                assert (p == floor) == (min(now) > max(baseline)), (now, baseline)


def _scipy_exact(now: list[float], baseline: list[float]) -> float:
    """scipy's exhaustive permutation test of the new runs' mid-rank sum (every partition, no sampling)."""
    def rank_sum(x, y):
        return rankdata(np.concatenate([x, y]))[: len(x)].sum()

    return float(permutation_test((now, baseline), rank_sum, permutation_type="independent", vectorized=False,
                                  n_resamples=np.inf, alternative="greater").pvalue)


def test_tie_heavy_patterns_match_scipys_exhaustive_permutation_test():
    pick = random.Random(27)
    for _ in range(40):
        k, n = pick.randint(3, 8), pick.randint(2, 3)  # scipy wants 2+ figures a side
        now = [float(100 + pick.choice([0, 0, 5, 10])) for _ in range(n)]
        baseline = [float(100 + pick.choice([0, 0, 0, 5])) for _ in range(k)]
        assert rank_p_value(now, baseline) == pytest.approx(_scipy_exact(now, baseline), rel=1e-9), (now, baseline)


def test_a_nan_figure_is_refused_not_ranked():
    with pytest.raises(ValueError, match="NaN"):
        rank_p_value([float("nan")], [1.0, 2.0, 3.0])


# --- the comparison: what the table prints and what the gate decides ------------------------------------

def _runs(xs: list[float], method: float = 1000.0) -> list[dict]:
    """Runs on a board clock whose event `x` takes each of `xs` (3 iterations each, MAD 0)."""
    return [profile({"Method::execute": method, "x": x}, clock=TICKS) for x in xs]


def _printed_floor_and_ps(text: str) -> tuple[float, list[float]]:
    """The floor a note states ("p >= F at best" or "p reaches F only") and every p in the tables' last column."""
    (floor,) = re.findall(r"p >= (\S+) at best|p reaches (\S+) only", text)
    ps = [float(line.split()[-1]) for line in text.splitlines()
          if re.match(r"^\S.*\s[+-]\d+\.\d\s+\d+\.\d\s+\S+$", line) and line.split()[-1] != "-"]
    return float(floor[0] or floor[1]), ps


def test_the_issues_six_tied_runs_print_a_p_value_at_the_notes_floor():
    # x: 100 in each of 6 baseline runs, 110 now. 1 run against 6 reaches 1/7 = 0.143 at best, above alpha
    # 0.1: the within-run rule convicts (+10 over 5% of 100, MADs 0), and the p column shows the exact 1/7
    # (the new run is the 110 in 1 of 7 assignments), where the normal approximation showed 0.021.
    comparison = compare_runs(_runs([100.0] * 6), _runs([110.0], method=1010.0))
    (x,) = comparison.regressions
    assert (x.name, x.rule, x.p_value) == ("x", "within-run", pytest.approx(1 / 7))
    text = format_comparison(comparison)
    assert "reach p >= 0.143 at best, above alpha 0.1" in text
    floor, ps = _printed_floor_and_ps(text)
    assert floor == 0.143 and ps == [0.143]


def test_ten_tied_runs_let_the_rank_test_convict_at_one_in_eleven():
    # 1/11 = 0.0909 <= alpha 0.1: the rank test decides, at its floor (the approximation said 0.0022)
    comparison = compare_runs(_runs([100.0] * 10), _runs([110.0], method=1010.0))
    (x,) = comparison.regressions
    assert (x.rule, x.p_value) == ("rank", pytest.approx(1 / 11))
    assert "0.0909" in format_comparison(comparison).splitlines()[-1]
    assert decide(comparison).failed


def test_a_new_run_tied_with_a_baseline_run_is_not_convicted_and_the_note_says_why():
    # x: 100 in 9 baseline runs and 110 in the tenth; 110 now. +10 over 5% of median 100 (MAD 0, noise 0):
    # slower. The floor 1/11 <= 0.1 lets the rank test decide. Pooled: nine 100s, two 110s; the new run is
    # one of the two 110s in 2 of the 11 assignments, p = 2/11 = 0.182 > 0.1: not a regression. The normal
    # approximation gave 0.0297 <= 0.1 and would have failed the gate.
    comparison = compare_runs(_runs([100.0] * 9 + [110.0]), _runs([110.0], method=1010.0))
    (x,) = comparison.suspects
    assert (x.verdict, x.rule, x.p_value) == ("unchanged", "rank", pytest.approx(2 / 11))
    decision = decide(comparison)
    assert not decision.failed and decision.status == "pass"
    text = format_comparison(comparison)
    assert ("rank test: 1 slower event(s) not significant, exact p above alpha 0.1: x p = 0.182 (p reaches 0.0909 "
            "only when every new run is slower than every baseline run and ties none)") in text
    floor, _ = _printed_floor_and_ps(text)
    assert floor == 0.0909 and x.p_value >= best_p_value(10, 1)
