"""Per-event statistics over iterations, and dropping warm-up iterations before computing them.

The median (p50) is what baselines compare, because one preempted iteration must not move it.
The spread is the median absolute deviation (MAD) for the same reason; `MAD_TO_SIGMA` turns it
into a standard-deviation estimate for normally distributed noise, which the noise rule in
`hil.regress.compare` uses.
"""

from __future__ import annotations

import copy
from typing import Any

from hil.analysis.statistics import summarize
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
    from hil.analysis.profile import totals_from_events

    events = profile.get("events", [])
    method = [e for e in events if e.get("kind") == "method"]
    iterations = len(method[0]["times_us"]) if method else 0
    totals, fraction = totals_from_events(events, iterations)
    profile["totals_us"] = {**(profile.get("totals_us") or {}), **totals}
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
