"""Per-iteration sums by kind, reported as their medians, and the NPU fraction.

Sums, medians and the fraction are taken from the times as given and rounded once, at the end: a
total summed from times already rounded to the nanosecond drifts by their rounding (one event in
three rounded up is a nanosecond per three events), and a fraction of rounded totals drifts again.

Works on the public event dicts of a profile (what profile.json holds), so the regression side can
recompute totals after dropping warm-up iterations with the very same definitions.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from hil.records import events as ev
from hil.records.statistics import percentile

# Times in a profile are rounded to the nanosecond: 3 decimals of a microsecond.
DECIMALS = 3
FRACTION_DECIMALS = 6

Event = Mapping[str, Any]


def rounded(value: float) -> float:
    """One time as profile.json holds it (to the nanosecond)."""
    return round(value, DECIMALS)


def _median(values: Sequence[float]) -> float:
    """Median, unrounded; 0 for no values."""
    return percentile(values, 50) if values else 0.0


def p50(values: Sequence[float]) -> float:
    """Median, rounded to the nanosecond; 0 for no values."""
    return rounded(_median(values))


def _per_iteration(events: Sequence[Event], iterations: int, key: str = "times_us") -> list[float]:
    return [sum(e[key][i] for e in events if e.get(key) and i < len(e[key])) for i in range(iterations)]


def call_overhead(call: float, inside: float, dump: float) -> float:
    """Time in one delegate call that none of its own events accounts for; never negative.

    NeutronBackend.cpp ends the dump event at the last record's stop plus the PAL-timed length of the
    whole `neutronRunBlocking`, so the logged dump usually overlaps the kernels and can exceed the
    call itself. Only a dump that fits beside the kernels is subtracted; otherwise the overhead is the
    call minus its kernels (and includes the dump generation). Events on another clock than the call
    can add up to more than the call; the overhead is then 0, not a negative time.
    """
    beside_dump = call - inside - dump
    return max(0.0, beside_dump if beside_dump >= 0 else call - inside)


def _delegate_parts(events: Sequence[Event], iterations: int) -> list[list[tuple[float, float, float]]]:
    """Per delegate call, per iteration: (the call, its kernels and operators, its dump)."""
    parts = []
    for call in (e for e in events if e.get("kind") == ev.DELEGATE_CALL):
        mine = [e for e in events if e.get("instruction_id") == call.get("instruction_id")]
        inside = _per_iteration([e for e in mine if e.get("kind") in (ev.NPU_KERNEL, ev.DELEGATE_OP)], iterations)
        dump = _per_iteration([e for e in mine if e.get("kind") == ev.PROFILING_DUMP], iterations)
        parts.append(list(zip(_per_iteration([call], iterations), inside, dump)))
    return parts


def _delegate_overheads(events: Sequence[Event], iterations: int) -> list[float]:
    """Per iteration, the sum over delegate calls of each call's own overhead."""
    totals = [0.0] * iterations
    for call in _delegate_parts(events, iterations):
        for i, (time, inside, dump) in enumerate(call):
            totals[i] += call_overhead(time, inside, dump)
    return totals


def dump_fit_is_close(events: Sequence[Event], iterations: int, within: float) -> bool:
    """Whether some call's dump fits beside its kernels to within `within` us (either way).

    There `call_overhead` switches rule, so times off by their rounding may pick the other rule and
    give a delegate overhead that differs by the whole dump: such a total cannot be checked again
    from rounded times (hil.analysis.stored_figures).
    """
    return any(abs(time - inside - dump) <= within for call in _delegate_parts(events, iterations)
               for time, inside, dump in call)


def totals_from_events(events: Sequence[Event], iterations: int) -> tuple[dict[str, float], float | None]:
    """Totals of one method's events and its NPU fraction (NPU kernel time over Method::execute).

    Only Neutron kernels count as NPU time: another delegate's operators run on the CPU.
    """
    by_kind = {k: [e for e in events if e.get("kind") == k] for k in ev.KINDS}
    method = _per_iteration(by_kind[ev.METHOD], iterations)
    cpu = _per_iteration(by_kind[ev.CPU_OP], iterations)
    dispatch = _per_iteration(by_kind[ev.CPU_OP], iterations, "call_overhead_us")
    calls = _per_iteration(by_kind[ev.DELEGATE_CALL], iterations)
    exact = {
        "method_execute": _median(method),
        "npu_kernels": _median(_per_iteration(by_kind[ev.NPU_KERNEL], iterations)),
        "delegate_ops": _median(_per_iteration(by_kind[ev.DELEGATE_OP], iterations)),
        "cpu_ops": _median(cpu),
        "cpu_call_overhead": _median(dispatch),
        "delegate_calls": _median(calls),
        "delegate_overhead": _median(_delegate_overheads(events, iterations)),
        "profiling_dump": _median(_per_iteration(by_kind[ev.PROFILING_DUMP], iterations)),
        "unattributed": _median([m - c - o - d for m, c, o, d in zip(method, cpu, dispatch, calls)]),
    }
    whole = exact["method_execute"]
    fraction = None if whole <= 0 else round(exact["npu_kernels"] / whole, FRACTION_DECIMALS)
    return {k: rounded(v) for k, v in exact.items()}, fraction


def main_method(events: Sequence[Event]) -> str:
    """The method the headline totals describe: `forward` when it ran, else the first method seen."""
    names = [str(e.get("method") or "forward") for e in events]
    return "forward" if "forward" in names or not names else names[0]


def method_events(events: Sequence[Event], method: str) -> list[Event]:
    return [e for e in events if str(e.get("method") or "forward") == method]


def iterations_of(events: Sequence[Event]) -> int:
    """Iterations of one method's events: the length of its Method::execute times (0 if absent)."""
    method = [e for e in events if e.get("kind") == ev.METHOD]
    return len(method[0].get("times_us") or []) if method else 0
