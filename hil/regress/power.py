"""What a comparison can prove with the runs it has: the rank test's best p-value and the runs it lacks.

The one-sided Mann-Whitney U test of n new runs against K baseline runs can say no more than "every
new run is slower than every baseline run", which happens by chance once in C(K + n, n) orderings:
its p-value is never below 1 / C(K + n, n) (`best_p_value`, from hil.regress.exact_rank, which counts
the p-values themselves). One new run against 3 baseline runs can reach 0.25 at
best, so with alpha = 0.1 the rank test alone could never convict anything before the history holds
9 runs. A comparison asks here first whether the rank test can decide at all, and when it cannot,
says how many more baseline runs it would take.
"""

from __future__ import annotations

from hil.regress.exact_rank import best_p_value

# Past this many baseline runs the count is not worth searching further (alpha that small is unusual).
_MAX_RUNS = 10_000


def rank_test_can_decide(baseline_runs: int, new_runs: int, alpha: float) -> bool:
    """Whether the rank test can reach `alpha` at all with these run counts."""
    return best_p_value(baseline_runs, new_runs) <= alpha


def baseline_runs_needed(new_runs: int, alpha: float, *, at_least: int = 1) -> int:
    """The fewest baseline runs (>= `at_least`) with which `new_runs` new runs can reach `alpha`."""
    runs = max(1, at_least)
    while runs < _MAX_RUNS and not rank_test_can_decide(runs, new_runs, alpha):
        runs += 1
    return runs
