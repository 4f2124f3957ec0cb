"""`Profile` and `Event`: what profile.json holds, typed, frozen, and written back byte for byte.

Every reader of a profile (the table, the figures, the budgets, the comparison, the history, the
timeline, the trace) takes a `Profile` and reads attributes; only this module knows the JSON keys.
A profile rebuilt from the history database is the same type: its events carry statistics and
`times_us=None` (the database keeps no per-iteration times).

`Profile.from_json(json.load(...)).to_json()` is the object read, key for key and in the same
order (hil.base.json_record), so sections added by other features (`numerics`, and keys not known
here) survive a read and a write. Records are also read-only mappings of their JSON, so code
written against the dict (`run.profile["totals_us"]["method_execute"]`) keeps working.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

from hil.base.json_record import EMPTY, JsonRecord
from hil.records.module_names import where
from hil.records.statistics import summarize

SCHEMA = "et-hil/profile/1"
def _empty() -> Mapping[str, Any]:
    return EMPTY


STAT_FIELDS = ("p50_us", "p90_us", "min_us", "max_us", "mad_us", "mean_us")


@dataclass(frozen=True, eq=False)
class Event(JsonRecord):
    """One event of one method: identity, per-iteration times (None when only statistics were kept), statistics."""

    name: str = ""
    kind: str = ""
    method: str | None = None
    op_types: tuple[str, ...] = ()
    delegate_debug_id: int | str | None = None
    delegate_backend_name: str | None = None
    instruction_id: int | None = None
    metadata: Mapping[str, Any] | None = None
    # The user's layers the event ran (nn.Module paths, `conv2`) and their source lines (`models.py:13`),
    # from the ETRecord (hil.records.module_names); empty in profiles written before they were kept.
    modules: tuple[str, ...] = ()
    sources: tuple[str, ...] = ()
    times_us: tuple[float, ...] | None = None
    call_overhead_us: tuple[float, ...] | None = None
    p50_us: float | None = None
    p90_us: float | None = None
    min_us: float | None = None
    max_us: float | None = None
    mad_us: float | None = None
    mean_us: float | None = None
    call_overhead_p50_us: float | None = None
    start_us: float | tuple[float, ...] | None = None  # per iteration, when an analysis knows start times
    key_order: tuple[str, ...] = ()
    extra: Mapping[str, Any] = field(default_factory=_empty)
    null_keys: frozenset[str] = frozenset()

    @property
    def method_name(self) -> str:
        """The method the event belongs to; `forward` for events that do not say."""
        return str(self.method or "forward")

    @property
    def where(self) -> str:
        """`conv2 (models.py:13)`: the user's layer and line, '' when the ETRecord named none."""
        return where(self.modules, self.sources)

    @property
    def spread(self) -> tuple[float, float]:
        """(p50, MAD): from the times when present, else from the stored statistics (history rows)."""
        if self.times_us:
            stats = summarize(self.times_us)
            return stats["p50_us"], stats["mad_us"]
        return float(self.p50_us or 0.0), float(self.mad_us or 0.0)

    @property
    def fastest(self) -> float:
        """The fastest iteration: from the times when present, else the stored `min_us`, else `p50_us`."""
        if self.times_us:
            return float(min(self.times_us))
        return float(self.min_us if self.min_us is not None else self.p50_us or 0.0)

    @property
    def measured(self) -> int:
        """How many iterations the figures come from: the times held, else the history row's count."""
        return len(self.times_us or ()) or int(self.extra.get("n") or 0)

    def with_statistics(self) -> "Event":
        """The event with its statistics taken again from its times (unchanged when it has none), the
        median call overhead too: a profile trimmed of its warm-up kept the untrimmed one before."""
        stats: dict[str, float] = summarize(self.times_us or ())
        if self.call_overhead_us:
            stats["call_overhead_p50_us"] = summarize(self.call_overhead_us)["p50_us"]
        return self.replace(**stats) if stats else self

    def without_first(self, count: int) -> "Event":
        """The event without its first `count` iterations, statistics redone."""
        cut = {k: tuple(getattr(self, k)[count:]) for k in ("times_us", "call_overhead_us") if getattr(self, k)}
        return self.replace(**cut).with_statistics()


def _events(value: Any) -> tuple[Event, ...]:
    return tuple(Event.from_json(e) for e in value)


@dataclass(frozen=True, eq=False)
class Profile(JsonRecord):
    """One run's profile: identity, iterations, events, totals, per-method totals, memory, console, warnings."""

    schema: str = SCHEMA
    board: str | None = None
    model: str | None = None
    simulated: bool | None = None
    iterations: int | None = None
    time_unit: str | None = None
    time_scale: Mapping[str, Any] = field(default_factory=_empty)
    events: tuple[Event, ...] = ()
    totals_us: Mapping[str, float] = field(default_factory=_empty)
    npu_fraction: float | None = None
    methods: Mapping[str, Mapping[str, Any]] = field(default_factory=_empty)
    cpu_fallback_ops: tuple[str, ...] = ()
    # Why an operator stayed on the CPU, by its short name (a delegate's lowering says: hil.aot.neutron_sim_qdq)
    cpu_fallback_reasons: Mapping[str, str] = field(default_factory=_empty)
    load_us: Mapping[str, float] = field(default_factory=_empty)
    memory: Mapping[str, Any] = field(default_factory=_empty)
    console: Mapping[str, Any] | None = None
    warnings: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    delegate: str | None = None
    # What made the int8 program (hil.aot.quantize.QuantizationRecord); null for a float program
    quantization: Mapping[str, Any] | None = None
    firmware: str | None = None  # which image ran on QEMU: "runtime" | "replay"
    time_base: Mapping[str, Any] | None = None  # what a QEMU run's numbers are
    delegated_outputs: str | None = None  # how the QEMU runtime image computed a delegate's outputs
    warmup_iterations: int | None = None
    numerics: Mapping[str, Any] | None = None  # the outputs against eager PyTorch and the host runtime
    drift: Mapping[str, Any] | None = None  # every operator's outputs against the ETRecord (debug outputs)
    stack: Mapping[str, Any] | None = None  # the stack's high-water mark (hil.target.stack_mark)
    code_size: Mapping[str, Any] | None = None  # flash bytes per kernel and of the runtime (hil.analysis.code_size)
    harness_steps_s: Mapping[str, float] = field(default_factory=_empty)
    key_order: tuple[str, ...] = ()
    extra: Mapping[str, Any] = field(default_factory=_empty)
    null_keys: frozenset[str] = frozenset()

    _NESTED = MappingProxyType({"events": _events})

    @classmethod
    def read(cls, path: Path) -> "Profile":
        """profile.json as a Profile (ValueError/OSError as json and open raise them)."""
        return cls.from_json(json.loads(Path(path).read_bytes()))

    def events_of(self, method: str) -> tuple[Event, ...]:
        return tuple(e for e in self.events if e.method_name == method)

    def of_kind(self, *kinds: str) -> tuple[Event, ...]:
        return tuple(e for e in self.events if e.kind in kinds)

    def total(self, name: str, default: float = 0.0) -> float:
        """One of `totals_us` (`method_execute`, `npu_kernels`, ...); `default` when the profile has none."""
        value = self.totals_us.get(name)
        return float(default if value is None else value)

    @property
    def method_execute_us(self) -> float:
        return self.total("method_execute")

    @property
    def console_inference_times_us(self) -> tuple[float, ...]:
        """The `Inference time:` lines the firmware printed (none when it printed none)."""
        return tuple((self.console or {}).get("inference_times_us") or ())

    @property
    def host_timed(self) -> bool:
        """Nanosecond timestamps written by the host runtime: times that machine load reaches."""
        return self.time_scale.get("ticks_per_us") == 1000.0 and not self.time_scale.get("follows_clock")

    @property
    def series(self) -> str:
        """Which program the run measured: the model, plus its delegate when it was lowered to one."""
        model = str(self.model or "model")
        return model if self.delegate in (None, "", "none") else f"{model}+{self.delegate}"


def as_profile(profile: Profile | Mapping[str, Any]) -> Profile:
    """A Profile from a Profile or from the JSON of one (a test's dict, a baseline file's `profile`)."""
    return Profile.from_json(profile)


def as_event(event: Event | Mapping[str, Any]) -> Event:
    return Event.from_json(event)


def history_event(row: Mapping[str, Any]) -> Event:
    """An event rebuilt from a history row: identity and statistics, `times_us=None`."""
    return Event.from_json(row)


def history_profile(run: Mapping[str, Any], events: list[Mapping[str, Any]]) -> Profile:
    """A profile rebuilt from one history run row and its event rows (hil.regress.history)."""
    return Profile.from_json({
        "schema": SCHEMA, "board": run["board"], "model": run["model"], "simulated": bool(run.get("simulated")),
        "iterations": run.get("iterations"), "time_unit": "us", "events": [history_event(e).to_json() for e in events],
        "totals_us": run.get("totals") or {}, "npu_fraction": run.get("npu_fraction"), "memory": run.get("memory") or {},
        "time_scale": run.get("time_scale") or {}, "numerics": run.get("numerics") or {},
    })


