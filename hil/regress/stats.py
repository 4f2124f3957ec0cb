"""Per-event statistics over iterations, and dropping warm-up iterations before computing them.

The median (p50) is what baselines compare, because one preempted iteration must not move it.
The spread is the median absolute deviation (MAD) for the same reason; `MAD_TO_SIGMA` turns it
into a standard-deviation estimate for normally distributed noise, which the noise rule in
`hil.regress.compare` uses.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any

from hil.analysis.statistics import mad, percentile, summarize
from hil.errors import AnalysisError

# For normal noise, sigma = 1.4826 * MAD (1 / Phi^-1(3/4)).
MAD_TO_SIGMA = 1.4826
STAT_FIELDS = ("p50_us", "p90_us", "min_us", "max_us", "mad_us", "mean_us")


def add_statistics(profile: dict[str, Any]) -> dict[str, Any]:
    """Fill every event's statistics from its `times_us`, in place; returns the same dict.

    Events without times keep what they have (a profile rebuilt from history stores only the
    statistics), so calling this twice, or on such a profile, is harmless.
    """
    for event in profile.get("events", []):
        times = event.get("times_us") or []
        if times:
            event.update(summarize(times))
    return profile


def recompute_totals(profile: dict[str, Any]) -> dict[str, Any]:
    """Totals and NPU fraction redone with the analysis's own definitions, after dropping iterations."""
    from hil.analysis.totals import iterations_of, main_method, method_events, totals_from_events

    events = profile.get("events", [])
    for method, summary in (profile.get("methods") or {}).items():
        theirs = method_events(events, method)
        method_totals, method_fraction = totals_from_events(theirs, iterations_of(theirs))
        summary.update(iterations=iterations_of(theirs), totals_us=method_totals, npu_fraction=method_fraction)
    mine = method_events(events, main_method(events))
    totals, fraction = totals_from_events(mine, iterations_of(mine))
    profile["totals_us"] = totals
    profile["npu_fraction"] = fraction
    return profile


def drop_warmup(profile: dict[str, Any], warmup: int) -> dict[str, Any]:
    """A copy of `profile` without its first `warmup` iterations, with statistics and totals redone.

    Warm-up iterations pay for cold caches and lazy initialisation, which a nightly comparison must
    not see. The copy records `warmup_iterations`, and a profile already trimmed is not trimmed again.
    """
    if warmup < 0:
        raise ValueError(f"warm-up must be >= 0, got {warmup}")
    if warmup == 0 or profile.get("warmup_iterations"):
        return add_statistics(copy.deepcopy(profile))
    iterations = int(profile.get("iterations") or 0)
    if iterations and warmup >= iterations:
        raise AnalysisError(
            f"model '{profile.get('model')}' on board '{profile.get('board')}': warm-up {warmup} leaves none of "
            f"its {iterations} iterations; run at least {warmup + 1} (--hil-iterations)"
        )
    trimmed = copy.deepcopy(profile)
    for event in trimmed.get("events", []):
        for key in ("times_us", "call_overhead_us"):
            if event.get(key):
                event[key] = list(event[key][warmup:])
    if iterations:
        trimmed["iterations"] = iterations - warmup
    trimmed["warmup_iterations"] = warmup
    add_statistics(trimmed)
    return recompute_totals(trimmed)


def event_spread(event: dict[str, Any]) -> tuple[float, float]:
    """(p50, MAD) of an event, from its times when present, else from stored statistics."""
    times = event.get("times_us") or []
    if times:
        stats = summarize(times)
        return stats["p50_us"], stats["mad_us"]
    return float(event.get("p50_us") or 0.0), float(event.get("mad_us") or 0.0)


def event_fastest(event: dict[str, Any]) -> float:
    """An event's fastest iteration, from its times when present, else its stored `min_us` (history rows).

    On a shared machine other jobs only ever add time to an iteration, so the fastest one is the run's
    least disturbed measure of what the program costs; `hil.regress.compare` judges host times by it.
    """
    times = event.get("times_us") or []
    if times:
        return float(min(times))
    stored = event.get("min_us")
    return float(stored if stored is not None else event.get("p50_us") or 0.0)


# --- statistics across runs: what judges a run against several earlier ones ------------------------

# A run whose large events are all slower by more than this (and than the baseline's own run-to-run
# shifts) is taken as disturbed by the machine (another job on the same cores), not by the program.
DISTURBED_SHIFT = 0.20
# Events of at least this share of Method::execute decide a run's overall shift.
SHIFT_EVENT_SHARE = 0.01
# Fewer large events than this: no overall shift can be told from a local change.
SHIFT_MIN_EVENTS = 3


def median(values: Sequence[float]) -> float:
    return percentile(values, 50)


def spread(values: Sequence[float]) -> float:
    """A robust sigma of `values`: MAD_TO_SIGMA x MAD (0 for fewer than two values)."""
    return MAD_TO_SIGMA * mad(values)


def run_shift(run: Mapping[str, float], centers: Mapping[str, float], method_key: str) -> float:
    """How much slower `run` is than `centers` over its large events: the median of their ratios.

    A change in one operator moves one ratio and leaves the median alone; machine load slows every
    large event and moves it. 1.0 when too few large events exist to tell the two apart.
    """
    whole = centers.get(method_key, 0.0)
    large = [k for k, c in centers.items() if k != method_key and c > 0 and c >= SHIFT_EVENT_SHARE * whole
             and run.get(k) is not None]
    if len(large) < SHIFT_MIN_EVENTS:
        return 1.0
    return median([run[k] / centers[k] for k in large])


def undisturbed(runs: list[Mapping[str, float]], method_key: str) -> tuple[list[int], list[float]]:
    """Indices of the runs in the fastest cluster (shift within DISTURBED_SHIFT of the fastest), and every
    run's shift against the medians of all. Load only ever slows a run down, so the fastest runs are
    the machine's quiet state; with fewer than SHIFT_MIN_EVENTS such runs, all are kept."""
    keys = set().union(*runs)
    centers = {k: median([r[k] for r in runs if r.get(k) is not None]) for k in keys}
    shifts = [run_shift(r, centers, method_key) for r in runs]
    fastest = min(shifts)
    keep = [i for i, s in enumerate(shifts) if s <= fastest * (1 + DISTURBED_SHIFT)]
    return (keep if len(keep) >= SHIFT_MIN_EVENTS else list(range(len(runs)))), shifts


def rank_p_value(now: Sequence[float], baseline: Sequence[float]) -> float:
    """One-sided Mann-Whitney U: the chance of `now` ranking this far above `baseline` by luck alone.

    With one new run against K baseline runs the smallest possible value is 1 / (K + 1): a single
    run can only say "slower than every baseline run", which is why confirmation runs add power.
    """
    from scipy.stats import mannwhitneyu

    if not now or not baseline:
        return 1.0
    return float(mannwhitneyu(list(now), list(baseline), alternative="greater").pvalue)
