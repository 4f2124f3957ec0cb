"""The Inspector over one ETDump and ETRecord: its event blocks, sorted into methods.

The runtime writes one "Execute" block per `Method::execute`; the Inspector merges blocks with the
same event sequence into one (one time per run). ExecuTorch 1.5.1's Inspector maps op types for the
`forward` method only and cannot even open the ETRecord of a program with several methods, so this
module hands it the `forward` graph, tells each block's method from its own events (the operators
the ETRecord's debug-handle map places at those instructions), and re-maps the op types of the other
methods with the Inspector's own resolution code. Within one method the block with the most runs is
kept; the runs of any other sequence are counted in a warning.
"""

from __future__ import annotations

import copy
import importlib
import subprocess
import warnings
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hil.records.tensors import reader_error
from hil.base.native_log import held_back
from hil.records import events as ev
from hil.analysis.inspector_log import inspector_warnings
from hil.base.errors import AnalysisError

FORWARD = "forward"


@dataclass
class MethodBlock:
    """The kept block of one method and how many runs of that method it holds and leaves out."""

    method: str
    block: Any
    runs: int
    left_out_runs: int = 0


@dataclass
class Inspected:
    """What the Inspector made of one ETDump: the methods' blocks, the load block, warnings."""

    methods: list[MethodBlock]
    load_block: Any
    warnings: list[str] = field(default_factory=list)


# Operator libraries an ETRecord's graph may name that ExecuTorch registers only when their module is imported
# (torch.library): without them the deserializer makes "fake operators" whose nodes name no op, and the check of
# the ETRecord against the .pte refuses the run. Keyed by how the edge program writes their namespace.
# (The Cortex-M backend's ops module cannot be imported first: it imports the passes, which name its operators.)
OPERATOR_LIBRARIES = {b"cortex_m.": "executorch.backends.cortex_m.passes"}


def load_operator_libraries(etrecord_path: Path) -> None:
    """Import the operator libraries the ETRecord's programs name (an AnalysisError naming one that fails)."""
    try:
        with zipfile.ZipFile(etrecord_path) as archive:
            text = b"".join(archive.read(name) for name in archive.namelist())
    except (OSError, zipfile.BadZipFile, RuntimeError):
        return  # parse_etrecord says what is wrong with the file
    for marker, module in OPERATOR_LIBRARIES.items():
        if marker in text:
            try:
                importlib.import_module(module)
            except ImportError as exc:
                raise AnalysisError(f"ETRecord {etrecord_path} names {marker.decode()}* operators, and {module}, "
                                    f"which defines them, failed to import: {exc}") from exc


def read_etrecord(etrecord_path: Path) -> Any:
    """Parse an ETRecord; every failure becomes an AnalysisError naming the file."""
    from executorch.devtools import parse_etrecord

    if not etrecord_path.is_file():
        raise AnalysisError(f"ETRecord {etrecord_path} does not exist")
    load_operator_libraries(etrecord_path)
    try:
        return parse_etrecord(str(etrecord_path))
    except Exception as exc:  # the parser raises RuntimeError, KeyError, zip errors...
        # torch's advice to load with weights_only=False would run the file's code: only its finding is kept
        raise AnalysisError(f"cannot read ETRecord {etrecord_path}: {reader_error(exc)}") from exc


def edge_programs(etrecord: Any) -> dict[str, Any]:
    """The ETRecord's edge programs by method (a one-method record stores a bare program)."""
    edge = etrecord.edge_dialect_program
    if edge is None:
        return {}
    return dict(edge) if isinstance(edge, dict) else {FORWARD: edge}


def inspect_etdump(data: bytes, etdump_path: Path, etrecord_path: Path, etrecord: Any) -> Inspected:
    """Run the Inspector on `data` (the ETDump's bytes) with the parsed `etrecord`; sort its blocks into methods.

    Times stay raw: source = target = CYCLES gives CPU events a scale factor of exactly 1, and the
    Inspector takes delegate events' start-to-end difference as is when no converter is given.
    """
    from executorch.devtools import Inspector
    from executorch.devtools.inspector import TimeScale as EtTimeScale

    programs = edge_programs(etrecord)
    for_inspector = etrecord
    if isinstance(etrecord.edge_dialect_program, dict):  # several methods: the Inspector takes one graph
        for_inspector = copy.copy(etrecord)
        for_inspector.edge_dialect_program = programs.get(FORWARD) or next(iter(programs.values()))
    with warnings.catch_warnings(), inspector_warnings(etrecord_path) as logged:
        warnings.simplefilter("ignore")  # "Output Buffer not found": we never ask for tensors
        try:
            with held_back() as flatc:  # its usage text for a dump it cannot read stays off the terminal
                inspector = Inspector(
                    etdump_data=data,
                    etrecord=for_inspector,
                    source_time_scale=EtTimeScale.CYCLES,
                    target_time_scale=EtTimeScale.CYCLES,
                )
        except Exception as exc:
            said = flatc.first_error()
            raise AnalysisError(
                f"the Inspector cannot decode ETDump {etdump_path} with ETRecord {etrecord_path}: "
                f"{type(exc).__name__}: {_one_line(exc)}" + (f" (flatc: {said})" if said else "")
            ) from exc
    executes = [b for b in inspector.event_blocks if _method_event(b) is not None]
    if not executes:
        raise AnalysisError(f"ETDump {etdump_path} holds no {ev.METHOD_EXECUTE} event: was the method run?")
    load = next((b for b in inspector.event_blocks if _method_event(b) is None), None)
    grouped: dict[str, list[Any]] = {}
    for block in executes:
        method = block_method(block, etrecord)
        grouped.setdefault(method, []).append(block)
    order = sorted(grouped, key=lambda m: (m != FORWARD, list(programs).index(m) if m in programs else len(programs)))
    methods, notes = [], []
    for method in order:
        blocks = sorted(grouped[method], key=lambda b: -runs_of(b))
        kept = MethodBlock(method, blocks[0], runs_of(blocks[0]), sum(runs_of(b) for b in blocks[1:]))
        if method != FORWARD:
            _remap_op_types(kept.block, etrecord, method, programs[method])
        if kept.left_out_runs:
            notes.append(f"method {method}: {kept.left_out_runs} of {kept.runs + kept.left_out_runs} run(s) had "
                         f"a different event sequence and are left out")
        methods.append(kept)
    return Inspected(methods, load, logged + notes)


def _one_line(exc: BaseException) -> str:
    """An exception's text on one line; for flatc's failure its status, not its argv of temporary paths."""
    if isinstance(exc, subprocess.CalledProcessError):
        how = f"signal {-exc.returncode}" if exc.returncode < 0 else f"status {exc.returncode}"
        return f"flatc ended with {how}"
    return " ".join(str(exc).split())


def _method_event(block: Any) -> Any:
    return next((e for e in block.events if e.name == ev.METHOD_EXECUTE), None)


def runs_of(block: Any) -> int:
    """How many runs an Inspector block merges: the times of its Method::execute."""
    event = _method_event(block)
    return len(event.perf_data.raw) if event is not None and event.perf_data is not None else 0


def _handle_ops(program: Any) -> dict[int, list[str]]:
    """Debug handle -> op types of one edge program's nodes."""
    found: dict[int, list[str]] = {}
    for node in program.graph_module.graph.nodes:
        handle = node.meta.get("debug_handle")
        if node.op == "call_function" and isinstance(handle, int):
            found.setdefault(handle, []).append(getattr(node.target, "__name__", str(node.target)))
    return found


def instruction_op_types(etrecord: Any, method: str) -> dict[int, list[str]]:
    """Instruction id -> the op types the ETRecord places there, for one method."""
    programs = edge_programs(etrecord)
    if method not in programs:
        return {}
    ops = _handle_ops(programs[method])
    handle_map = (etrecord._debug_handle_map or {}).get(method) or {}
    result = {}
    for instruction, handles in handle_map.items():
        handles = handles if isinstance(handles, (list, tuple)) else [handles]
        result[int(instruction)] = [t for h in handles for t in ops.get(h, [])]
    return result


def block_method(block: Any, etrecord: Any) -> str:
    """The method whose operators at each instruction best fit the block's kernel calls."""
    scores = {}
    for method in edge_programs(etrecord):
        by_instruction = instruction_op_types(etrecord, method)
        checks = [ev.op_type_matches(e.name, by_instruction.get(e._instruction_id, [])) for e in block.events]
        scores[method] = sum(1 for c in checks if c) - sum(1 for c in checks if c is False)
    return max(scores, key=lambda m: (scores[m], m == FORWARD)) if scores else FORWARD


def _remap_op_types(block: Any, etrecord: Any, method: str, program: Any) -> None:
    """Give a non-forward block the op types of its own method, with the Inspector's own resolution."""
    from executorch.devtools.debug_format.et_schema import FXOperatorGraph
    from executorch.devtools.inspector._inspector_utils import create_debug_handle_to_op_node_mapping

    for event in block.events:
        event.debug_handles, event.op_types, event.stack_traces, event.module_hierarchy = None, [], {}, {}
    block._gen_resolve_debug_handles(
        etrecord._debug_handle_map[method],
        (etrecord._delegate_map or {}).get(method),
        (etrecord._instruction_id_to_num_outs_map or {}).get(method),
    )
    node_map = create_debug_handle_to_op_node_mapping(FXOperatorGraph.gen_operator_graph(program.graph_module))
    for event in block.events:
        event._associate_with_op_graph_nodes(debug_handle_to_op_node_map=node_map)
