"""Dropping a run's warm-up iterations: statistics and totals redone with the analysis's own definitions.

Warm-up iterations pay for cold caches and lazy initialisation, which a nightly comparison must not
see. A trimmed profile records `warmup_iterations`, and a profile already trimmed is never trimmed
again, so the step is safe wherever a profile is judged.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hil.records.profile_model import Profile, as_profile
from hil.analysis.totals import iterations_of, main_method, method_events, totals_from_events
from hil.base.errors import AnalysisError


def with_statistics(profile: Profile | Mapping[str, Any]) -> Profile:
    """Every event's statistics taken again from its times; events without times (history) keep theirs."""
    profile = as_profile(profile)
    return profile.replace(events=[e.with_statistics() for e in profile.events])


def recompute_totals(profile: Profile) -> Profile:
    """Totals, NPU fraction and per-method summaries redone from the events as they are now."""
    events = [e.to_json() for e in profile.events]
    methods: dict[str, Any] = {}
    for method, summary in profile.methods.items():
        theirs = method_events(events, method)
        totals, fraction = totals_from_events(theirs, iterations_of(theirs))
        methods[method] = {**summary, "iterations": iterations_of(theirs), "totals_us": totals, "npu_fraction": fraction}
    mine = method_events(events, main_method(events))
    totals, fraction = totals_from_events(mine, iterations_of(mine))
    changes: dict[str, Any] = {"totals_us": totals, "npu_fraction": fraction}
    if methods:
        changes["methods"] = methods
    return profile.replace(**changes)


def drop_warmup(profile: Profile | Mapping[str, Any], warmup: int) -> Profile:
    """`profile` without its first `warmup` iterations (statistics and totals redone); 0 or an already
    trimmed profile: statistics redone only."""
    profile = as_profile(profile)
    if warmup < 0:
        raise ValueError(f"warm-up must be >= 0, got {warmup}")
    if warmup == 0 or profile.warmup_iterations:
        return with_statistics(profile)
    iterations = int(profile.iterations or 0)
    if iterations and warmup >= iterations:
        raise AnalysisError(
            f"model '{profile.model}' on board '{profile.board}': warm-up {warmup} leaves none of "
            f"its {iterations} iterations; run at least {warmup + 1} (--hil-iterations)"
        )
    trimmed = profile.replace(events=[e.without_first(warmup) for e in profile.events], warmup_iterations=warmup,
                              **({"iterations": iterations - warmup} if iterations else {}))
    return recompute_totals(trimmed)
