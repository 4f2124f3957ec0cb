"""The exact one-sided rank test (Mann-Whitney U) of new runs above baseline runs, ties included.

On the QEMU runtime board a run's figures are instruction counts under `-icount`: exact and repeatable,
so runs tie exactly, often all of them. The normal approximation to the Mann-Whitney U test (what
`scipy.stats.mannwhitneyu` falls back to as soon as there are ties) then gives p-values no ordering of
the runs can produce: 0.0067 for one run above 8 tied baseline runs, where that run being the slowest
is 1 chance in 9. A gate that compares such a value with alpha convicts on evidence it does not have,
so here the p-value is counted, never approximated.

The test: under "no change", every way of choosing which n of the K + n pooled figures are the new
runs is equally likely, C(K + n, n) assignments. The statistic is the new runs' rank sum, with tied
figures given the mean of the ranks they share (mid-ranks; the same order as U, which counts a
baseline run below a new one as 1 and a tie as 1/2). The p-value is the share of the assignments
whose statistic is at least the observed one.

The count is exact at any size: figures are grouped by value, and a dynamic programme over the
groups counts, for every number m of new runs placed so far and every (doubled, so integer) rank
sum, the assignments that reach it, a group of t figures taking k new runs in C(t, k) ways. Python
integers do not round. Its work is about (groups) x (n + 1) x (rank sums) x (group size); with the
history's 10 baseline runs and a few confirmation runs that is some thousands of steps, and no size
switches to another method.

The observed assignment is always among those counted, so no p-value is below 1 / C(K + n, n), the
floor `best_p_value` states (reached only when every new run is slower than every baseline run and
none ties with one). The notes and the table print both with `p_text`, so a printed p-value is never
below the printed floor either (rounding to 3 significant digits keeps order).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction
from itertools import groupby


def assignments(baseline_runs: int, new_runs: int) -> int:
    """How many equally likely ways there are of choosing which of the pooled runs are the new ones."""
    return math.comb(baseline_runs + new_runs, new_runs)


def best_p_value(baseline_runs: int, new_runs: int) -> float:
    """The smallest p-value `new_runs` runs can reach against `baseline_runs` runs: 1 / C(K + n, n)."""
    if baseline_runs < 1 or new_runs < 1:
        return 1.0
    return float(Fraction(1, assignments(baseline_runs, new_runs)))


def tail_count(now: Sequence[float], baseline: Sequence[float]) -> int:
    """How many of the C(K + n, n) assignments give the new runs a rank sum at least the observed one."""
    values = [*now, *baseline]
    if any(math.isnan(v) for v in values):
        raise ValueError(f"rank test: a figure is NaN (new runs {list(now)}, baseline runs {list(baseline)})")
    sizes = [(value, len(list(same))) for value, same in groupby(sorted(values))]
    doubled_rank: dict[float, int] = {}
    below = 0
    for value, size in sizes:
        doubled_rank[value] = 2 * below + size + 1  # twice the mean of ranks below + 1 .. below + size
        below += size
    observed = sum(doubled_rank[v] for v in now)
    n = len(now)
    ways: list[dict[int, int]] = [{0: 1}] + [{} for _ in range(n)]  # ways[m][rank sum]: m new runs placed
    for value, size in sizes:
        placed: list[dict[int, int]] = [{} for _ in range(n + 1)]
        for m, sums in enumerate(ways):
            for total, count in sums.items():
                for k in range(min(size, n - m) + 1):
                    key = total + k * doubled_rank[value]
                    placed[m + k][key] = placed[m + k].get(key, 0) + count * math.comb(size, k)
        ways = placed
    return sum(count for total, count in ways[n].items() if total >= observed)


def rank_p_value(now: Sequence[float], baseline: Sequence[float]) -> float:
    """The exact one-sided p-value of `now` ranking this far above `baseline` by chance (1.0 if a side is empty)."""
    if not now or not baseline:
        return 1.0
    return float(Fraction(tail_count(now, baseline), assignments(len(baseline), len(now))))


def p_text(p: float) -> str:
    """A p-value as the notes and the table print it (3 significant digits: 1/11 is 0.0909, 1/286 0.0035)."""
    return f"{p:.3g}"
