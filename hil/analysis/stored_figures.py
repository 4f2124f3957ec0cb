"""The figures a profile stores beside its per-iteration times must agree with those times.

`hil compare`, `hil trace` and `hil baseline update` take what they judge and draw from `times_us`
again (hil.analysis.warmup.with_statistics), so a stored p50, MAD or total that disagrees with the
times was never looked at: 374 of 461 number changes in an audit's profiles gave `hil compare` output
identical to the unchanged profile's (issue 32). Yet the table, the budgets, the history, the report
and a user's own test read the stored figures. When the two disagree, the file was edited or written
by something else, and which of them is right cannot be told: the profile is refused, naming the
field (FileContentError, exit status 2). Figures are taken again with the analysis's own definitions
(hil.records.statistics.summarize, hil.analysis.totals.totals_from_events), never a second copy.

How close is "agree": profile.json holds times and figures rounded to the nanosecond (3 decimals of a
microsecond, hil.analysis.totals.DECIMALS), each figure taken from the unrounded times and then
rounded. Rounding moves each time by at most half a nanosecond (HALF_NS). A percentile, minimum,
maximum or mean moves by no more than the times under it do, the MAD by at most twice that (its
centre moves too), and the stored figure's own rounding adds HALF_NS: STATISTIC_SLACK_US = 3 x HALF_NS.
A total is the median over iterations of a sum of at most one time (and one call overhead) per event,
so it can move by HALF_NS per summed value, plus its own rounding. The NPU fraction (6 decimals) moves
as its two totals do, over Method::execute. The relative 1e-9 covers a float's own representation of
large figures. A change larger than these is never rounding.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from hil.analysis.totals import (DECIMALS, FRACTION_DECIMALS, dump_fit_is_close, iterations_of, main_method,
                                 method_events, totals_from_events)
from hil.records.statistics import summarize
from hil.records.validate.fields import Fields, at, describe

HALF_NS = 0.5 * 10 ** -DECIMALS
STATISTIC_SLACK_US = 3 * HALF_NS
HALF_FRACTION_STEP = 0.5 * 10 ** -FRACTION_DECIMALS
RELATIVE_SLACK = 1e-9
# Stored figure -> the statistic of the event's times it is (hil.analysis.profile.EventRow.to_json).
FROM_TIMES = {key: key for key in ("p50_us", "p90_us", "min_us", "max_us", "mad_us", "mean_us")}
FROM_CALL_OVERHEADS = {"call_overhead_p50_us": "p50_us"}

Event = Mapping[str, Any]


def check_stored_figures(profile: Mapping[str, Any], path: Path | str, *, where: str = "") -> None:
    """Refuse `profile` (already type-checked by hil.records.validate.profile) when a stored figure
    disagrees with its times: each event's statistics, the headline totals, NPU fraction and iteration
    count, and each method's. Events without times (a profile rebuilt from the history) are not checked."""
    fields = Fields(path)
    events: Sequence[Event] = profile.get("events") or ()
    # A warm-up trimmed before Event.with_statistics redid it kept the untrimmed median call overhead, a
    # figure no reader uses: such profiles (committed baselines among them) are not refused for it.
    overheads = {} if profile.get("warmup_iterations") else FROM_CALL_OVERHEADS
    for index, event in enumerate(events):
        _statistics(fields, event, at(at(where, "events"), index), overheads)
    _method_figures(fields, method_events(events, main_method(events)), profile, where)
    for method, summary in (profile.get("methods") or {}).items():
        _method_figures(fields, method_events(events, method), summary, at(at(where, "methods"), method))


def _statistics(fields: Fields, event: Event, where: str, overheads: Mapping[str, str]) -> None:
    for times_key, figures in (("times_us", FROM_TIMES), ("call_overhead_us", overheads)):
        times = event.get(times_key)
        if not times:
            continue
        found = summarize(times)
        for key, statistic in figures.items():
            _agree(fields, event, key, found[statistic], where, STATISTIC_SLACK_US, f"its {times_key}", " us")


def _method_figures(fields: Fields, events: Sequence[Event], holder: Mapping[str, Any], where: str) -> None:
    """One method's iteration count, totals and NPU fraction (`holder`: the profile, or its `methods` entry)."""
    iterations = iterations_of(events)
    if not iterations:
        return
    stored_iterations = holder.get("iterations")
    if stored_iterations is not None and stored_iterations != iterations:
        fields.refuse(at(where, "iterations"), f"is {describe(stored_iterations)}, but Method::execute was timed "
                                               f"{iterations} time(s)")
    totals, _ = totals_from_events(events, iterations)
    summed = sum(bool(e.get("times_us")) + bool(e.get("call_overhead_us")) for e in events)
    slack = HALF_NS * (summed + 1)
    stored_totals = holder.get("totals_us") or {}
    unsure = {"delegate_overhead"} if dump_fit_is_close(events, iterations, slack) else set()
    for key, value in totals.items():
        if key not in unsure:
            _agree(fields, stored_totals, key, value, at(where, "totals_us"), slack, "the events' times", " us")
    whole = totals["method_execute"]
    if whole > slack:  # else whether it is 0 (no fraction) cannot be told from rounded times
        share = totals["npu_kernels"] / whole
        _agree(fields, holder, "npu_fraction", share, where, HALF_FRACTION_STEP + slack * (1 + share) / (whole - slack),
               "the events' times", "")


def _agree(fields: Fields, holder: Mapping[str, Any], key: str, found: float, where: str, slack: float,
           source: str, unit: str) -> None:
    """`holder[key]`, where present, is `found` within `slack`; a null where a figure can be taken is refused too."""
    if key not in holder:
        return  # written before the figure was kept
    stored = holder[key]
    if stored is None or not math.isclose(stored, found, rel_tol=RELATIVE_SLACK, abs_tol=slack):
        fields.refuse(at(where, key), f"is {describe(stored)}, but {source} give {round(found, 6):.15g} (a stored "
                                      f"figure must agree with the times within {slack:.3g}{unit}, their rounding)")
