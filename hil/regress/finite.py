"""Figures a comparison will read must be numbers: a baseline or history row holding NaN is refused.

NaN compares false with everything, so a baseline whose totals or event times are NaN would let any
run pass; infinity would let none. A JSON file may hold `NaN` and `Infinity` (Python's json reads
them), and a history row may hold whatever an older writer stored, so both are checked where they
are read, and the refusal names the file and the event.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from hil.analysis.profile_model import STAT_FIELDS, Profile, as_profile
from hil.errors import AnalysisError
from hil.regress.identity import keyed_events

EVENT_FIGURES = STAT_FIELDS


def _bad(value: Any) -> bool:
    return isinstance(value, float) and not math.isfinite(value)


def check_finite(profile: Profile | Mapping[str, Any], where: str) -> None:
    """AnalysisError naming `where` and the first event (or total) whose figure is not finite."""
    profile = as_profile(profile)
    for key, event in keyed_events(profile.events).items():
        for field in EVENT_FIGURES:
            if _bad(getattr(event, field)):
                raise AnalysisError(f"{where}: event {key} has {field} = {getattr(event, field)}; figures must be finite")
        times = event.times_us
        for index, value in enumerate(times if isinstance(times, tuple) else ()):
            if _bad(value):
                raise AnalysisError(f"{where}: event {key} has times_us[{index}] = {value}; figures must be finite")
    for name, value in profile.totals_us.items():
        if _bad(value):
            raise AnalysisError(f"{where}: totals_us.{name} = {value}; figures must be finite")
    if _bad(profile.npu_fraction):
        raise AnalysisError(f"{where}: npu_fraction = {profile.npu_fraction}; figures must be finite")
