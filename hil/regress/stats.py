"""Per-event statistics over iterations, and statistics across runs (warm-up: hil.analysis.warmup;
the exact rank test: hil.regress.exact_rank).

The median (p50) is what baselines compare, because one preempted iteration must not move it.
The spread is the median absolute deviation (MAD) for the same reason; `MAD_TO_SIGMA` turns it
into a standard-deviation estimate for normally distributed noise, which the noise rule in
`hil.regress.compare` uses.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from hil.records.profile_model import STAT_FIELDS, Event, Profile, as_event  # noqa: F401  (STAT_FIELDS re-exported)
from hil.records.statistics import mad, percentile
from hil.analysis.warmup import drop_warmup, recompute_totals, with_statistics  # noqa: F401  (re-exported)
from hil.regress.exact_rank import rank_p_value  # noqa: F401  (re-exported: the rank test across runs, exact)

# For normal noise, sigma = 1.4826 * MAD (1 / Phi^-1(3/4)).
MAD_TO_SIGMA = 1.4826


def add_statistics(profile: Profile | Mapping[str, Any]) -> Profile:
    """Every event's statistics from its `times_us`; events without times (history rows) keep theirs."""
    return with_statistics(profile)


def event_spread(event: Event | Mapping[str, Any]) -> tuple[float, float]:
    """(p50, MAD) of an event, from its times when present, else from stored statistics."""
    return as_event(event).spread


def event_fastest(event: Event | Mapping[str, Any]) -> float:
    """An event's fastest iteration, from its times when present, else its stored `min_us` (history rows).

    On a shared machine other jobs only ever add time to an iteration, so the fastest one is the run's
    least disturbed measure of what the program costs; `hil.regress.compare` judges host times by it.
    """
    return as_event(event).fastest


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
