"""Do the ETDump, the ETRecord and the .pte belong together? Mismatches are refused or named, never silent.

Two checks:

* before analysis, the ETRecord against the run's `.pte` (same program): at every instruction of
  every method the `.pte` calls an operator or a delegate; the ETRecord's debug-handle map says which
  edge ops sit at that instruction and its delegate map which backend. An ETRecord of a revised model
  (same ops, another order) places other ops at the same instructions and is refused, naming them.
* after the Inspector, every CPU operator event's name (`native_call_<op>.out`) against the op types
  the ETRecord gave it, and every NPU kernel against having any op type: each event that does not fit
  is named in a warning; when most do not fit, the pair is refused.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from hil.records import events as ev
from hil.analysis.blocks import edge_programs, instruction_op_types
from hil.base.errors import AnalysisError

# Shown in a message before "and N more".
_NAMED = 8


def _named(items: list[str]) -> str:
    more = f" and {len(items) - _NAMED} more" if len(items) > _NAMED else ""
    return "; ".join(items[:_NAMED]) + more


def pte_mismatches(etrecord: Any, pte_path: Path) -> list[str]:
    """Every instruction where the `.pte` and the ETRecord disagree (empty when they are one program)."""
    from executorch.exir.schema import DelegateCall, KernelCall

    from hil.records.pte import load_program

    program, _, _ = load_program(pte_path)
    record_methods = set(edge_programs(etrecord))
    found: list[str] = []
    plan_names = [plan.name for plan in program.execution_plan]
    if record_methods and set(plan_names) != record_methods:
        found.append(f"methods {sorted(plan_names)} in the .pte, {sorted(record_methods)} in the ETRecord")
    delegates_of = etrecord._delegate_map or {}
    for plan in program.execution_plan:
        ops = instruction_op_types(etrecord, plan.name)
        delegates = {str(k): v for k, v in (delegates_of.get(plan.name) or {}).items()}
        for index, instruction in enumerate(plan.chains[0].instructions):
            args = instruction.instr_args
            if isinstance(args, KernelCall):
                op = plan.operators[args.op_index].name.split("::")[-1]
                recorded = ops.get(index)
                if recorded is not None and ev.op_type_matches(f"{ev.NATIVE_CALL_PREFIX}{op}.out", recorded) is False:
                    found.append(f"{plan.name} instruction {index}: the .pte calls {op}, the ETRecord has "
                                 f"{', '.join(recorded) or 'no op'}")
            elif isinstance(args, DelegateCall):
                backend = plan.delegates[args.delegate_index].id
                recorded = delegates.get(str(index), {}).get("name")
                if recorded != backend:
                    found.append(f"{plan.name} instruction {index}: the .pte calls delegate {backend}, "
                                 f"the ETRecord has {recorded or 'none'}")
    return found


def check_etrecord_matches_pte(etrecord: Any, etrecord_path: Path, pte_path: Path) -> None:
    """Refuse an ETRecord that was not made with this `.pte`, naming where they differ."""
    found = pte_mismatches(etrecord, pte_path)
    if found:
        raise AnalysisError(
            f"ETRecord {etrecord_path} does not belong to {pte_path} ({len(found)} difference(s)): {_named(found)}"
        )


def unmatched_events(events: Iterable[Mapping[str, Any]]) -> list[str]:
    """Events whose op types cannot be matched to the ETRecord, each as `name (method, instruction N)`."""
    found = []
    for event in events:
        kind, name, ops = event.get("kind"), str(event.get("name")), list(event.get("op_types") or [])
        fits = ev.op_type_matches(name, ops)
        if (kind == ev.CPU_OP and fits is False) or (kind == ev.NPU_KERNEL and not ops):
            found.append(f"{name} ({event['method']}, instruction {event.get('instruction_id')}: "
                         f"op types {', '.join(ops) or 'none'})")
    return found


def check_events(events: list[Mapping[str, Any]], etdump_path: Path, etrecord_path: Path) -> list[str]:
    """Warnings naming the events that do not fit the ETRecord; refuse when most operator events do not."""
    checks = [ev.op_type_matches(str(e.get("name")), list(e.get("op_types") or [])) for e in events]
    checks = [c for c in checks if c is not None]
    delegated = [e for e in events if e.get("kind") in ev.DELEGATED_KINDS]
    mismatched_ops = checks and sum(checks) * 2 < len(checks)
    unknown_delegate = delegated and not any(e.get("delegate_backend_name") for e in delegated)
    if mismatched_ops or unknown_delegate:
        raise AnalysisError(
            f"ETDump {etdump_path} does not belong to ETRecord {etrecord_path}: "
            + (f"{len(checks) - sum(checks)} of {len(checks)} operator events do not match the "
               "ETRecord's op types" if mismatched_ops else "its delegate events are unknown to the ETRecord")
        )
    found = unmatched_events(events)
    if not found:
        return []
    return [f"{len(found)} event(s) do not match ETRecord {etrecord_path}, their op types may be another "
            f"op's (is it the ETRecord of this model?): {_named(found)}"]
