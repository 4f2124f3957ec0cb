"""Budgets: hard limits a run must meet, stated in one line or in a per-board file.

In a test:   @pytest.mark.hil_budget(total_us=900, npu_fraction_min=0.6, ops={"aten.convolution.default": 200, "0": 50})
In a file:   budgets/<board>.toml, one table per model:

    [cifar10]
    total_us = 900
    npu_fraction_min = 0.6
    memory_bytes = 120000
    stack_bytes_max = 16384            # the stack's high-water mark (profile["stack"]["used_bytes"])
    [cifar10.ops]
    "aten.convolution.default" = 200   # every event of this op type, p50 <= 200 us
    "0" = 50                           # NPU kernel "0"
    "native_call_add.out" = 10         # an event by name
    [cifar10.ops_total]
    "aten.convolution.default" = 380   # all events of this op type together, sum of p50s <= 380 us
    [cifar10.modules]
    "conv2" = 50                       # the events the user's layer `conv2` ran (and layers inside it), summed

and the numerics of the outputs against eager PyTorch (hil.numerics): `snr_db_min = 40`,
`max_abs_error = 1e-3`; a run that computed no outputs (simulated NPU, replay image) breaks them.

`ops` limits each matching event on its own (two convolutions of 200 us each pass `ops` = 200);
`ops_total` and `modules` limit the sum of the matching events' p50s, counting only events that are
work of their own (CPU operators, NPU kernels, other delegates' operators: never a DELEGATE_CALL, which
holds its kernels' op types and layers too). A module is named by its nn.Module path from the ETRecord
(hil.records.module_names). A key in `ops`, `ops_total` or `modules` that matches no event is itself
a failure: a typo must not pass silently. The
marker wins over the file key by key. Measured values are p50s (the same numbers baselines use).
"""

from __future__ import annotations

import difflib
import math
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from hil.base.errors import BoardConfigError
from hil.records.profile_model import Event, Profile, as_profile
from hil.regress.identity import EventLabel, event_labels, op_types_text

BUDGET_KEYS = ("total_us", "npu_fraction_min", "ops", "ops_total", "modules", "memory_bytes", "memory", "snr_db_min",
               "max_abs_error", "stack_bytes_max")
# Limits keyed by an op type or a name (`ops`, `ops_total`) or by a user's layer (`modules`).
EVENT_GROUPS = ("ops", "ops_total", "modules")
# The events that are work of their own: a DELEGATE_CALL holds its kernels' op types and layers too,
# so a sum over it and its kernels would count them twice.
SUMMED_KINDS = ("cpu_op", "npu_kernel", "delegate_op")


@dataclass
class Budget:
    """Limits for one model; None means "no limit"."""

    total_us: float | None = None
    npu_fraction_min: float | None = None
    ops: dict[str, float] = field(default_factory=dict)
    memory_bytes: int | None = None
    memory: dict[str, float] = field(default_factory=dict)  # limits on single fields of profile["memory"]
    source: str = "marker"
    # The target's outputs against eager PyTorch (profile["numerics"]["vs_eager"], the worst output).
    snr_db_min: float | None = None
    max_abs_error: float | None = None
    # The sum of the p50s of every event of an op type or name (`ops` limits each event on its own).
    ops_total: dict[str, float] = field(default_factory=dict)
    # The sum of the p50s of the events a user's layer ran (`conv2`; `head` holds `head.1`).
    modules: dict[str, float] = field(default_factory=dict)
    # The stack's high-water mark, bytes (profile["stack"]["used_bytes"], hil.target.stack_mark).
    stack_bytes_max: float | None = None

    @property
    def empty(self) -> bool:
        return not any(getattr(self, f.name) for f in fields(self) if f.name != "source")


@dataclass
class Violation:
    what: str
    measured: float | None
    limit: float
    unit: str
    detail: str = ""

    def describe(self) -> str:
        unit = f" {self.unit}" if self.unit else ""
        measured = "nothing measured" if self.measured is None else f"measured {self.measured:.6g}{unit}"
        sense = "min" if self.what.endswith("(min)") else "max"
        text = f"{self.what}: {measured}, limit ({sense}) {self.limit:.6g}{unit}"
        return f"{text} [{self.detail}]" if self.detail else text


# Limits that are a duration or a size (or an error bound): a negative one no run can meet, so it is a
# typo, refused as input rather than failing every test. npu_fraction_min is a share (0..1); snr_db_min
# may be any finite number of decibels.
NON_NEGATIVE = ("total_us", "memory_bytes", "max_abs_error", "ops", "ops_total", "modules", "memory", "stack_bytes_max")


def budget_limit(key: str, value: Any, source: str, group: str | None = None) -> float:
    """One limit of a budget, checked: a finite number (no bool), >= 0 where it is a duration or a size (NON_NEGATIVE,
    by `group` for a table's entries), a share for npu_fraction_min; else a BoardConfigError naming `source` and the
    key (`ops['aten.add.Tensor']` for an entry of `group`). The one rule for every limit, wherever the budget comes
    from (a marker, a budgets file), for any new table of limits too."""
    name = key if group is None else f"{group}[{key!r}]"
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise BoardConfigError(f"budget from {source}: {name} must be a finite number, got {value!r}")
    if (group or key) in NON_NEGATIVE and value < 0:
        raise BoardConfigError(f"budget from {source}: {name} must be >= 0 (a duration or size), got {value!r}")
    if group is None and key == "npu_fraction_min" and not 0 <= value <= 1:
        raise BoardConfigError(f"budget from {source}: {name} must be a share between 0 and 1, got {value!r}")
    return value


def budget_from_mapping(values: dict[str, Any], source: str) -> Budget:
    """Build a Budget from marker kwargs or a TOML table; an unknown key or a limit that is no finite
    number (or negative where it is a duration or size) is a BoardConfigError naming `source` and the key."""
    unknown = sorted(set(values) - set(BUDGET_KEYS))
    if unknown:
        raise BoardConfigError(f"budget from {source}: unknown key(s) {unknown}; known: {list(BUDGET_KEYS)}")

    def number(key: str) -> float | None:
        return None if values.get(key) is None else budget_limit(key, values[key], source)

    limits = {}
    for group in (*EVENT_GROUPS, "memory"):
        table = values.get(group) or {}
        if not isinstance(table, Mapping):
            raise BoardConfigError(f"budget from {source}: {group} must be a table of limits, got {table!r}")
        limits[group] = {key: budget_limit(key, value, source, group) for key, value in table.items()}
    mem = number("memory_bytes")
    return Budget(number("total_us"), number("npu_fraction_min"), limits["ops"], None if mem is None else int(mem),
                  limits["memory"], source, number("snr_db_min"), number("max_abs_error"), limits["ops_total"],
                  limits["modules"], number("stack_bytes_max"))


def check_budget_file(path: Path) -> None:
    """Every table of a budgets TOML file read as a Budget: a bad limit is refused before any run."""
    for model in _read_budget_file(path):
        load_file_budget(path, model)


def _read_budget_file(path: Path) -> dict[str, Any]:
    try:
        return tomllib.loads(Path(path).read_text(encoding="utf-8-sig"))  # a BOM (Windows editors) is no statement
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise BoardConfigError(f"budget file {path}: {exc}") from exc


def load_file_budget(path: Path, model: str) -> Budget | None:
    """The table for `model` in a budgets TOML file, or None when the file or the table is absent."""
    path = Path(path)
    if not path.is_file():
        return None
    table = _read_budget_file(path).get(model)
    if table is None:
        return None
    if not isinstance(table, dict):
        raise BoardConfigError(f"budget file {path}: [{model}] must be a table")
    return budget_from_mapping(table, f"{path} [{model}]")


def merge_budgets(base: Budget | None, override: Budget | None) -> Budget | None:
    """`override` wins key by key (ops and memory limits merged), so a test can tighten one file limit."""
    if base is None or override is None:
        return override or base
    return Budget(
        override.total_us if override.total_us is not None else base.total_us,
        override.npu_fraction_min if override.npu_fraction_min is not None else base.npu_fraction_min,
        {**base.ops, **override.ops},
        override.memory_bytes if override.memory_bytes is not None else base.memory_bytes,
        {**base.memory, **override.memory},
        f"{base.source} + {override.source}",
        override.snr_db_min if override.snr_db_min is not None else base.snr_db_min,
        override.max_abs_error if override.max_abs_error is not None else base.max_abs_error,
        {**base.ops_total, **override.ops_total},
        {**base.modules, **override.modules},
        override.stack_bytes_max if override.stack_bytes_max is not None else base.stack_bytes_max,
    )


def memory_footprint(memory: Mapping[str, Any]) -> int | None:
    """RAM the method used: the allocators' `used` bytes, else the planned buffers' sizes."""
    allocators = memory.get("allocators") or {}
    used = [a.get("used") for a in allocators.values() if isinstance(a, Mapping) and a.get("used") is not None]
    if used:
        return int(sum(used))
    planned = memory.get("planned_buffers") or {}
    sizes = list(planned.values()) if isinstance(planned, Mapping) else list(planned)
    return int(sum(sizes)) if sizes else None


def _matches(event: Event, key: str) -> bool:
    by_name = key == event.name and event.kind != "profiling_dump"
    return by_name or key in event.op_types


def _in_module(event: Event, key: str) -> bool:
    """Did the event run the layer `key` or one inside it (`head` holds `head.1`, not `header`)?"""
    return any(m == key or m.startswith(f"{key}.") for m in event.modules)


def _nearest(key: str, names: set[str], kind: str) -> str:
    """`no event matches it` plus the names of this run closest to `key` (difflib): a typo names its fix."""
    close = difflib.get_close_matches(key, sorted(names), n=3, cutoff=0.5)
    if close:
        return f"no event matches it; nearest {kind}: {', '.join(close)}"
    shown = ", ".join(sorted(names)[:8]) + (", ..." if len(names) > 8 else "")
    return f"no event matches it; {kind} measured: {shown or 'none'}"


def _layers(events: list[Event]) -> set[str]:
    """Every layer path the events ran, with the layers holding them (`head.1` gives `head` too)."""
    parts = (m.split(".") for e in events for m in e.modules)
    return {".".join(p[:i]) for p in parts for i in range(1, len(p) + 1)}


def _op_names(events: list[Event]) -> set[str]:
    return {str(e.name) for e in events if e.kind != "profiling_dump"} | {t for e in events for t in e.op_types}


def _summed(labels: dict[int, EventLabel], what: str, limit: float, events: list[Event], unmatched: str) -> list[Violation]:
    """A limit on the sum of `events`' p50s: broken, or met (no violation); an empty match is a failure
    (`unmatched` says so, naming the nearest names)."""
    events = [e for e in events if e.kind in SUMMED_KINDS]
    if not events:
        return [Violation(what, None, limit, "us", unmatched)]
    total = sum(e.spread[0] for e in events)
    if total <= limit:
        return []
    named = ", ".join(f"{labels[id(e)].text} {e.spread[0]:.6g} us" for e in events)
    return [Violation(what, total, limit, "us", f"sum of {len(events)} event(s): {named}")]


def _event_limits(profile: Profile, budget: Budget) -> list[Violation]:
    """`ops` (each matching event on its own), `ops_total` and `modules` (the sum of the matching events)."""
    labels = {id(e): label for e, label in zip(profile.events, event_labels(profile.events))}
    found: list[Violation] = []
    for key, limit in budget.ops.items():
        matching = [e for e in profile.events if _matches(e, key)]
        if not matching:
            found.append(Violation(f"op {key!r} (each event)", None, limit, "us",
                                   _nearest(key, _op_names(profile.events), "names and op types")))
        for event in matching:
            p50 = event.spread[0]
            if p50 > limit:
                detail = f"{event.kind}, op types {op_types_text(event)}"
                found.append(Violation(f"op {key!r} (each event): {labels[id(event)].text}", p50, limit, "us", detail))
    for key, limit in budget.ops_total.items():
        found += _summed(labels, f"ops_total {key!r} (sum of its events)", limit,
                         [e for e in profile.events if _matches(e, key)],
                         _nearest(key, _op_names(profile.events), "names and op types"))
    for key, limit in budget.modules.items():
        found += _summed(labels, f"module {key!r} (sum of its events)", limit,
                         [e for e in profile.events if _in_module(e, key)],
                         _nearest(key, _layers(profile.events), "layers"))
    return found


def check_budget(profile: Profile | Mapping[str, Any], budget: Budget) -> list[Violation]:
    """Every limit of `budget` that `profile` breaks (empty when it meets them all)."""
    profile = as_profile(profile)
    found: list[Violation] = []
    total = profile.totals_us.get("method_execute")
    if budget.total_us is not None and (total is None or total > budget.total_us):
        found.append(Violation("total latency (Method::execute p50)", total, budget.total_us, "us"))
    fraction = profile.npu_fraction
    if budget.npu_fraction_min is not None and (fraction is None or fraction < budget.npu_fraction_min):
        found.append(Violation("NPU fraction (min)", fraction, budget.npu_fraction_min, ""))
    found += _event_limits(profile, budget)
    memory = profile.memory
    if budget.memory_bytes is not None:
        used = memory_footprint(memory)
        if used is None or used > budget.memory_bytes:
            found.append(Violation("memory (allocators used)", used, budget.memory_bytes, "B"))
    for key, limit in budget.memory.items():
        value = memory.get(key)
        if not isinstance(value, (int, float)) or value > limit:
            found.append(Violation(f"memory {key!r}", value if isinstance(value, (int, float)) else None, limit, "B"))
    if budget.stack_bytes_max is not None:
        used = (profile.stack or {}).get("used_bytes")
        if not isinstance(used, int) or used > budget.stack_bytes_max:
            found.append(Violation("stack (high-water mark)", used if isinstance(used, int) else None,
                                   budget.stack_bytes_max, "B", (profile.stack or {}).get("note") or ""))
    from hil.numerics.budget import numerics_violations

    found += [Violation(*v) for v in numerics_violations(profile.numerics, budget.snr_db_min, budget.max_abs_error)]
    return found


def format_violations(violations: list[Violation], profile: Profile | Mapping[str, Any], budget: Budget,
                      artifacts: Path | str | None) -> str:
    """The failure message: each limit broken, measured against limit, and where the evidence is."""
    profile = as_profile(profile)
    head = f"budget exceeded for model '{profile.model}' on board '{profile.board}' (budget from {budget.source}):"
    lines = [head, *(f"  - {v.describe()}" for v in violations)]
    lines.append(f"  artifacts: {artifacts if artifacts is not None else '(unknown)'}")
    return "\n".join(lines)
