"""What a profile.json (and the profile inside a baseline file) must hold before anything reads it.

The rule: every field a reader of the regression side uses (`hil compare`, `hil baseline update`,
`hil trace`, the report, the pytest gate) has the type that reader expects, each figure is a finite
number and each duration is not negative, and the profile times at least one `Method::execute`.
Fields no reader uses are left alone, so a profile with annotations of its own still reads. A
profile rebuilt from the history database has statistics instead of per-iteration times; both forms
are accepted.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hil.records.events import KINDS, METHOD
from hil.records.profile_model import SCHEMA
from hil.records.validate.fields import Fields, at
from hil.records.validate.footprint import check_code_size, check_stack
from hil.records.validate.numerics import check_numerics
from hil.records.validate.places import check_event_places

PROFILE_SCHEMA = SCHEMA  # written once, by the model (hil.records.profile_model)
BASELINE_SCHEMA = "et-hil/baseline/1"
# Per-event statistics (hil.records.statistics.summarize) and the call-overhead median.
STATISTICS = ("p50_us", "p90_us", "min_us", "max_us", "mad_us", "mean_us", "call_overhead_p50_us")


def check_profile(data: Any, path: Path | str, *, where: str = "") -> dict[str, Any]:
    """`data` (parsed from `path`) when it is a profile the readers can use; else FileContentError.

    `where` names the profile inside its file (`profile` in a baseline).
    """
    fields = Fields(path)
    profile = fields.mapping(data, where, optional=False)
    fields.text(profile.get("schema"), at(where, "schema"), optional=False, choices=(PROFILE_SCHEMA,))
    for key in ("model", "board", "delegate", "time_unit"):
        fields.text(profile.get(key), at(where, key))
    fields.flag(profile.get("simulated"), at(where, "simulated"))
    fields.whole(profile.get("iterations"), at(where, "iterations"))
    fields.whole(profile.get("warmup_iterations"), at(where, "warmup_iterations"))
    check_time_scale(fields, profile.get("time_scale"), at(where, "time_scale"))
    fields.entries(profile.get("totals_us"), at(where, "totals_us"), fields.a_number_or_null)
    fields.number(profile.get("npu_fraction"), at(where, "npu_fraction"), at_least=0)
    fields.entries(profile.get("methods"), at(where, "methods"), lambda m, name: _method(fields, m, name))
    for key in ("cpu_fallback_ops", "warnings", "notes"):
        fields.items(profile.get(key), at(where, key), fields.a_text)
    for key in ("memory", "console", "load_us", "time_base", "drift"):
        fields.mapping(profile.get(key), at(where, key))
    for key in ("firmware", "delegated_outputs"):
        fields.text(profile.get(key), at(where, key))
    check_numerics(fields, profile.get("numerics"), at(where, "numerics"))
    check_stack(fields, profile.get("stack"), at(where, "stack"))
    check_code_size(fields, profile.get("code_size"), at(where, "code_size"))
    events = fields.items(profile.get("events"), at(where, "events"), lambda e, name: check_event(fields, e, name),
                          optional=False)
    if not any(event["kind"] == METHOD for event in events):
        fields.refuse(at(where, "events"), "hold no Method::execute event: the profile times nothing")
    return profile


def check_baseline(data: Any, path: Path | str) -> dict[str, Any]:
    """`data` (parsed from `path`) when it is a baseline file: its schema, provenance and profile."""
    fields = Fields(path)
    baseline = fields.mapping(data, "", optional=False)
    fields.text(baseline.get("schema"), "schema", optional=False, choices=(BASELINE_SCHEMA,))
    fields.mapping(baseline.get("provenance"), "provenance")
    check_profile(baseline.get("profile"), path, where="profile")
    return baseline


def check_time_scale(fields: Fields, value: Any, where: str) -> dict[str, Any]:
    """How raw ticks became the profile's unit (hil.analysis.timescale.TimeScale.to_dict)."""
    scale = fields.mapping(value, where)
    if scale:
        fields.number(scale.get("ticks_per_us"), at(where, "ticks_per_us"), optional=False, above=0)
        fields.number(scale.get("neutron_ticks_per_us"), at(where, "neutron_ticks_per_us"), above=0)
        fields.flag(scale.get("follows_clock"), at(where, "follows_clock"))
        fields.text(scale.get("unit"), at(where, "unit"))
    return scale


def _method(fields: Fields, value: Any, where: str) -> None:
    summary = fields.mapping(value, where, optional=False)
    fields.whole(summary.get("iterations"), at(where, "iterations"))
    fields.entries(summary.get("totals_us"), at(where, "totals_us"), fields.a_number_or_null)
    fields.number(summary.get("npu_fraction"), at(where, "npu_fraction"), at_least=0)


def check_event(fields: Fields, value: Any, where: str) -> None:
    """One event of a profile (or a history row of one: statistics without per-iteration times)."""
    event = fields.mapping(value, where, optional=False)
    fields.text(event.get("kind"), at(where, "kind"), optional=False, choices=KINDS)
    fields.text(event.get("name"), at(where, "name"), optional=False)
    fields.text(event.get("method"), at(where, "method"))
    fields.text(event.get("delegate_backend_name"), at(where, "delegate_backend_name"))
    fields.items(event.get("op_types"), at(where, "op_types"), fields.a_text)
    check_event_places(fields, event, where)
    fields.whole(event.get("instruction_id"), at(where, "instruction_id"))
    fields.whole(event.get("n"), at(where, "n"))
    debug_id = event.get("delegate_debug_id")  # an int, or a string for backends that name their events
    if debug_id is not None and (isinstance(debug_id, bool) or not isinstance(debug_id, (int, str))):
        fields.wrong(debug_id, at(where, "delegate_debug_id"), "a whole number or a string")
    for key in ("times_us", "call_overhead_us"):
        fields.items(event.get(key), at(where, key), fields.a_time)
    for key in STATISTICS:
        fields.number(event.get(key), at(where, key), at_least=0)
    start = event.get("start_us")
    if isinstance(start, list):  # one start per iteration
        if not start:
            fields.wrong(start, at(where, "start_us"), "a start time or a list of them")
        fields.items(start, at(where, "start_us"), fields.a_time)
    else:
        fields.number(start, at(where, "start_us"), at_least=0)
