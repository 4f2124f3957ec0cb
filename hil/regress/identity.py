"""Which event in one run is "the same event" in another run.

Names alone are not enough: Neutron kernels are called "0", "1", ... in every delegate, and a CPU
operator such as `native_call_convolution.out` runs several times per inference. An event is
therefore identified by (kind, name, occurrence among events of that kind and name), which stays
stable as long as the program's structure does; op types are shown beside it, not part of it,
so a changed ETRecord mapping does not make every event look new.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from hil.records.events import short_op
from hil.records.profile_model import Event, Profile, as_event, as_profile

# The Neutron profiling dump is instrumentation cost, not model work: shown, never judged.
UNJUDGED_KINDS = frozenset({"profiling_dump"})


def event_key(kind: str, name: str, occurrence: int, method: str = "forward") -> str:
    """`kind:name#occurrence`, prefixed by the method when it is not `forward`."""
    key = f"{kind}:{name}#{occurrence}"
    return key if method == "forward" else f"{method}/{key}"


def keyed_events(events: Iterable[Event | Mapping[str, Any]]) -> dict[str, Event]:
    """Map each event's stable key to the event, in program order."""
    seen: dict[tuple[str, str, str], int] = {}
    keyed: dict[str, Event] = {}
    for event in map(as_event, events):
        kind, name, method = str(event.kind), str(event.name), event.method_name
        occurrence = seen.get((method, kind, name), 0)
        seen[(method, kind, name)] = occurrence + 1
        keyed[event_key(kind, name, occurrence, method)] = event
    return keyed


def op_types_text(event: Event | Mapping[str, Any]) -> str:
    """Op types as one short cell of a table ("-" when the event maps to none)."""
    types = as_event(event).op_types
    return ", ".join(str(t) for t in types) if types else "-"


def display_name(event: Event | Mapping[str, Any]) -> str:
    """What a person calls the event: NPU kernels by index, the rest by name."""
    event = as_event(event)
    name = str(event.name if "name" in event else "?")
    if event.kind == "npu_kernel":
        return f"npu kernel {name}"
    if event.kind == "delegate_op":
        return f"{event.delegate_backend_name or 'delegate'} {name}"
    return name


def series_name(profile: Profile | Mapping[str, Any]) -> str:
    """Which program a run measured: the model, plus its delegate when it was lowered to one.

    `cifar10` run on the CPU and `cifar10` lowered to the Neutron backend are different programs;
    they get their own baselines and their own trend lines.
    """
    return as_profile(profile).series


@dataclass(frozen=True)
class EventLabel:
    """What a person calls one event: `name` (with `#2` on a repeated operator's later runs) and `where`,
    the user's layer and line (`conv2 (models.py:13)`, '' when the ETRecord names none). The table, the
    report, the gate's messages, the budgets and JUnit all take it from `event_labels`."""

    name: str
    where: str = ""

    @property
    def text(self) -> str:
        """`native_call_convolution.out #2 in conv2 (models.py:13)`: the label as one line."""
        return f"{self.name} in {self.where}" if self.where else self.name


def event_labels(events: Sequence[Event | Mapping[str, Any]]) -> list[EventLabel]:
    """Per event, in order, its label.

    Neutron kernels are "0", "1", ... in every delegate call, so a kernel is named with its call and
    its op types (`call 1 / kernel 0: convolution, relu`), a profiling dump with its call; other events
    as `display_name` says, with `#2`, `#3` on the later runs of a repeated operator in its method.
    """
    names, call = [], -1
    events = [as_event(e) for e in events]
    for event in events:
        kind = event.kind
        if kind == "delegate_call":
            call += 1
        ops = ", ".join(dict.fromkeys(short_op(str(t)) for t in event.op_types))
        if kind == "npu_kernel":
            names.append(f"call {max(call, 0)} / kernel {event.name if 'name' in event else None}" + (f": {ops}" if ops else ""))
        elif kind == "profiling_dump":
            names.append(f"call {max(call, 0)} / profiling dump")
        else:
            names.append(display_name(event))
    seen: dict[tuple[str, str], int] = {}
    for index, name in enumerate(names):  # an operator run twice in a method: its second run is `name #2`
        run = (events[index].method_name, name)
        seen[run] = seen.get(run, 0) + 1
        if seen[run] > 1:
            names[index] = f"{name} #{seen[run]}"
    return [EventLabel(name, event.where) for name, event in zip(names, events)]


def readable_names(events: Sequence[Event | Mapping[str, Any]]) -> list[str]:
    """Per event, in order, its label as one line (`EventLabel.text`): what a chart or a CI page shows."""
    return [label.text for label in event_labels(events)]
