"""Which event in one run is "the same event" in another run.

Names alone are not enough: Neutron kernels are called "0", "1", ... in every delegate, and a CPU
operator such as `native_call_convolution.out` runs several times per inference. An event is
therefore identified by (kind, name, occurrence among events of that kind and name), which stays
stable as long as the program's structure does; op types are shown beside it, not part of it,
so a changed ETRecord mapping does not make every event look new.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from hil.analysis.events import short_op

# The Neutron profiling dump is instrumentation cost, not model work: shown, never judged.
UNJUDGED_KINDS = frozenset({"profiling_dump"})


def event_key(kind: str, name: str, occurrence: int, method: str = "forward") -> str:
    """`kind:name#occurrence`, prefixed by the method when it is not `forward`."""
    key = f"{kind}:{name}#{occurrence}"
    return key if method == "forward" else f"{method}/{key}"


def keyed_events(events: Iterable[Mapping[str, Any]]) -> dict[str, Mapping[str, Any]]:
    """Map each event's stable key to the event, in program order."""
    seen: dict[tuple[str, str, str], int] = {}
    keyed: dict[str, Mapping[str, Any]] = {}
    for event in events:
        kind, name = str(event.get("kind", "")), str(event.get("name", ""))
        method = str(event.get("method") or "forward")
        occurrence = seen.get((method, kind, name), 0)
        seen[(method, kind, name)] = occurrence + 1
        keyed[event_key(kind, name, occurrence, method)] = event
    return keyed


def op_types_text(event: Mapping[str, Any]) -> str:
    """Op types as one short cell of a table ("-" when the event maps to none)."""
    types = event.get("op_types") or []
    return ", ".join(str(t) for t in types) if types else "-"


def display_name(event: Mapping[str, Any]) -> str:
    """What a person calls the event: NPU kernels by index, the rest by name."""
    name = str(event.get("name", "?"))
    if event.get("kind") == "npu_kernel":
        return f"npu kernel {name}"
    if event.get("kind") == "delegate_op":
        return f"{event.get('delegate_backend_name') or 'delegate'} {name}"
    return name


def series_name(profile: Mapping[str, Any]) -> str:
    """Which program a run measured: the model, plus its delegate when it was lowered to one.

    `cifar10` run on the CPU and `cifar10` lowered to the Neutron backend are different programs;
    they get their own baselines and their own trend lines.
    """
    model = str(profile.get("model") or "model")
    delegate = profile.get("delegate")
    return model if delegate in (None, "", "none") else f"{model}+{delegate}"


def readable_names(events: Sequence[Mapping[str, Any]]) -> list[str]:
    """Per event, in order, what a reader of a chart or a CI page calls it.

    Neutron kernels are "0", "1", ... in every delegate call, so a kernel is named with its call and
    its op types (`call 1 / kernel 0: convolution, relu`), a profiling dump with its call; other events
    as `display_name` says, with `#2`, `#3` on the later runs of a repeated operator.
    """
    names, call = [], -1
    for event in events:
        kind = event.get("kind")
        if kind == "delegate_call":
            call += 1
        ops = ", ".join(dict.fromkeys(short_op(str(t)) for t in event.get("op_types") or []))
        if kind == "npu_kernel":
            names.append(f"call {max(call, 0)} / kernel {event.get('name')}" + (f": {ops}" if ops else ""))
        elif kind == "profiling_dump":
            names.append(f"call {max(call, 0)} / profiling dump")
        else:
            names.append(display_name(event))
    seen: dict[str, int] = {}
    for index, name in enumerate(names):  # an operator run twice: its second run is `name #2`
        seen[name] = seen.get(name, 0) + 1
        if seen[name] > 1:
            names[index] = f"{name} #{seen[name]}"
    return names
