"""Per-event statistics over iterations: one definition for the analysis and the regression side.

The median (p50) is what baselines compare, because one preempted iteration must not move it; the
spread is the median absolute deviation (MAD) for the same reason.
"""

from __future__ import annotations

import math
from collections.abc import Sequence


def percentile(values: Sequence[float], q: float) -> float:
    """The q-th percentile (0..100) with linear interpolation between order statistics."""
    if not values:
        raise ValueError("percentile of no values")
    ordered = sorted(values)
    pos = (len(ordered) - 1) * q / 100.0
    low, high = math.floor(pos), math.ceil(pos)
    return ordered[low] + (ordered[high] - ordered[low]) * (pos - low)


def mad(values: Sequence[float]) -> float:
    """Median absolute deviation from the median (0 for fewer than two values)."""
    if len(values) < 2:
        return 0.0
    center = percentile(values, 50)
    return percentile([abs(v - center) for v in values], 50)


def summarize(times_us: Sequence[float]) -> dict[str, float]:
    """p50, p90, min, max, MAD and mean of one event's per-iteration times."""
    values = [float(t) for t in times_us]
    if not values:
        return {}
    return {
        "p50_us": percentile(values, 50),
        "p90_us": percentile(values, 90),
        "min_us": min(values),
        "max_us": max(values),
        "mad_us": mad(values),
        "mean_us": sum(values) / len(values),
    }
