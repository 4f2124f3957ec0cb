"""A *simulated* eIQ Neutron delegate: a partitioner and a Python backend for CI without the NXP SDK.

Why: the real Neutron backend needs ``eiq_neutron_sdk`` (not on PyPI: only NXP's eIQ package index serves it).  To exercise
the whole profiling road -- partly delegated programs, a kernel-index -> debug-handle map in the
ETRecord, Neutron delegate events in the ETDump -- we delegate the same kinds of operators the NPU
runs and record the same kind of map.  The backend is called ``NeutronSimBackend`` (not
``NeutronBackend``) so every table that shows ``delegate_backend_name`` says it is a simulation.

Its payload is JSON describing the kernels (no microcode).  No runtime exists for it: the host
runtime loads such a .pte but loading the method fails ("Backend NeutronSimBackend is not
registered", error 0x20), as would a board.  That is expected; the simulated ETDump
(``hil.replay.neutron_etdump``) reads the payload back instead.  Importing this module registers
the ``"neutron-sim"`` lowering with ``hil.aot.export``.

Kernels.  A delegated region is split into "Neutron kernels" like the converter fuses TFLite ops:
an anchor op (convolution, linear/addmm/mm, max/avg pooling, add, mean, cat, or a standalone
relu/hardtanh) plus what the NPU folds into it: the weight transpose of a linear (``permute_copy`` of a
constant), a batch norm after a convolution/linear, and one relu/hardtanh after a convolution/linear/
add.  ``getitem`` nodes ride along with the node they unpack and contribute no debug handle.
``debug_handle_map`` = ``{k: handles of kernel k}`` plus a final empty entry for the profiling dump,
like the real backend's ``Neutron to Edge map``.
"""

from __future__ import annotations

import json
import math
import operator
from dataclasses import dataclass, field, fields
from enum import IntEnum
from typing import final

import torch
from torch.export import ExportedProgram
from torch.fx import Node
from torch.fx.passes.infra.partitioner import CapabilityBasedPartitioner
from torch.fx.passes.operator_support import OperatorSupportBase

from executorch.exir import schema
from executorch.exir.backend.backend_details import BackendDetails, PreprocessResult
from executorch.exir.backend.compile_spec_schema import CompileSpec
from executorch.exir.backend.partitioner import DelegationSpec, Partitioner, PartitionResult
from executorch.exir.backend.utils import tag_constant_data

from hil.aot import quantize
from hil.aot.export import LoweringPlan, register_lowering
from hil.aot.quantize_step import pt2e_hook
from hil.aot.neutron_sim_qdq import cpu_reasons, delegate_note, int8_bytes, is_quantized_graph, qdq_cluster, \
    quantized_dtype

BACKEND_ID = "NeutronSimBackend"
PAYLOAD_FORMAT = "et-hil/neutron-sim-payload/2"  # /2: each kernel names its dtype ("int8")
# /1 payloads (float kernels, made before neutron-sim took int8 operators only) still read, for `hil inspect` of
# old runs; the replay refuses their kernels (hil.replay.neutron_etdump: no dtype, so not int8).
PAYLOAD_FORMATS = ("et-hil/neutron-sim-payload/1", PAYLOAD_FORMAT)
# The payload is a JSON header (the kernels) then this byte, then the int8 weights.
PAYLOAD_SEPARATOR = b"\0"


class FunctionCode(IntEnum):
    """Simulated Neutron kernel function codes (the 1-byte event metadata); 0 is the profiling dump."""

    PROFILING_DUMP = 0
    CONV2D = 1
    DEPTHWISE_CONV2D = 2
    FULLY_CONNECTED = 3
    MAX_POOL = 4
    AVG_POOL = 5
    ADD = 6
    MEAN = 7
    CONCAT = 8
    ACTIVATION = 9


_ANCHORS: dict[str, FunctionCode] = {
    "convolution": FunctionCode.CONV2D,
    "addmm": FunctionCode.FULLY_CONNECTED,
    "mm": FunctionCode.FULLY_CONNECTED,
    "linear": FunctionCode.FULLY_CONNECTED,
    "max_pool2d_with_indices": FunctionCode.MAX_POOL,
    "max_pool2d": FunctionCode.MAX_POOL,
    "avg_pool2d": FunctionCode.AVG_POOL,
    "add": FunctionCode.ADD,
    "mean": FunctionCode.MEAN,
    "cat": FunctionCode.CONCAT,
    "relu": FunctionCode.ACTIVATION,
    "hardtanh": FunctionCode.ACTIVATION,
}
# The ATen ops (base names) the simulated NPU runs; everything else stays on the CPU.
SUPPORTED_OPS: frozenset[str] = frozenset(_ANCHORS)
_MAC_ANCHORS = {FunctionCode.CONV2D, FunctionCode.DEPTHWISE_CONV2D, FunctionCode.FULLY_CONNECTED}
_ACTIVATIONS = {"relu", "hardtanh"}
_BATCH_NORM = "_native_batch_norm_legit_no_training"


def op_name(node: Node) -> str:
    """ATen base name of a call_function node ('aten.convolution.default' -> 'convolution')."""
    name = getattr(node.target, "__name__", str(node.target))
    parts = name.split(".")
    return parts[1] if len(parts) >= 3 else parts[-1]


def op_type(node: Node) -> str:
    return getattr(node.target, "__name__", str(node.target))


def _is_getitem(node: Node, index: int | None = None) -> bool:
    return node.op == "call_function" and node.target is operator.getitem and (index is None or node.args[1] == index)


def _only_user(node: Node) -> Node | None:
    users = list(node.users)
    return users[0] if len(users) == 1 else None


def _first_output_getitem(node: Node) -> Node | None:
    """For tuple-returning ops (max_pool2d_with_indices, batch norm): the getitem(0) if that is all that is used."""
    users = list(node.users)
    if len(users) == 1 and _is_getitem(users[0], 0):
        return users[0]
    return None


def _is_weight_transpose(node: Node) -> bool:
    """A permute_copy of a graph input (a lifted weight) feeding one matmul: part of a linear layer."""
    if node.op != "call_function" or op_name(node) != "permute_copy":
        return False
    src = node.args[0]
    user = _only_user(node)
    return isinstance(src, Node) and src.op == "placeholder" and user is not None and op_name(user) in {"addmm", "mm"}


def _anchor_code(node: Node) -> FunctionCode | None:
    """The kernel an anchor node starts, or None if the NPU (as simulated) does not run it."""
    if node.op != "call_function":
        return None
    name = op_name(node)
    code = _ANCHORS.get(name)
    if code is None:
        return None
    if name == "convolution":
        weight = node.args[1].meta["val"] if isinstance(node.args[1], Node) else None
        if weight is None or weight.dim() != 4 or node.args[6]:  # 2D, not transposed
            return None
        groups = node.args[8]
        if groups > 1 and groups == node.args[0].meta["val"].shape[1]:
            return FunctionCode.DEPTHWISE_CONV2D
    if name.startswith("max_pool2d_with") and _first_output_getitem(node) is None:
        return None  # the indices output is used: not a plain max pool
    return code


@dataclass
class Kernel:
    """One simulated Neutron kernel: its nodes and the sizes the cost model needs."""

    index: int
    function_code: int
    function: str
    op_types: list[str]
    debug_handles: list[int]
    dtype: str  # what its quantize nodes make: "int8" (the cost model's MACs are int8 MACs)
    macs: int = 0
    elements: int = 0
    weight_bytes: int = 0
    nodes: list[Node] = field(default_factory=list, repr=False, compare=False)

    def to_json(self) -> dict:
        """The payload entry (everything but the graph nodes)."""
        return {f.name: getattr(self, f.name) for f in fields(self) if f.name != "nodes"}


def _numel(node: Node) -> int:
    val = node.meta.get("val")
    return int(val.numel()) if isinstance(val, torch.Tensor) else 0


def _nbytes(node: object) -> int:
    stored = int8_bytes(node)  # an int8 constant's bytes, not those of its dequantized float copy
    if stored is not None:
        return stored
    val = node.meta.get("val") if isinstance(node, Node) else None
    return int(val.numel() * val.element_size()) if isinstance(val, torch.Tensor) else 0


def _sizes(anchor: Node, code: FunctionCode) -> dict[str, int]:
    """MACs / elements / weight bytes of the anchor op (fused ops are free on the NPU)."""
    out = anchor if _numel(anchor) else (_first_output_getitem(anchor) or anchor)
    out_numel = _numel(out)
    name = op_name(anchor)
    if code in (FunctionCode.CONV2D, FunctionCode.DEPTHWISE_CONV2D):
        weight = anchor.args[1].meta["val"]
        bias = anchor.args[2]
        return {"macs": out_numel * math.prod(weight.shape[1:]), "weight_bytes": _nbytes(anchor.args[1]) + _nbytes(bias)}
    if code is FunctionCode.FULLY_CONNECTED:
        mat1, mat2, bias = (anchor.args[1], anchor.args[2], anchor.args[0]) if name == "addmm" else (anchor.args[0], anchor.args[1], None)
        depth = mat1.meta["val"].shape[-1]
        return {"macs": out_numel * depth, "weight_bytes": _nbytes(mat2) + _nbytes(bias)}
    if code in (FunctionCode.MAX_POOL, FunctionCode.AVG_POOL):
        return {"elements": out_numel * math.prod(anchor.args[1])}
    if code is FunctionCode.MEAN:
        return {"elements": _numel(anchor.args[0])}
    return {"elements": out_numel}


def group_kernels(nodes: list[Node]) -> list[Kernel]:
    """Split nodes (in topological order) into kernels; nodes that fit no kernel are left out. A kernel is taken
    only with its dequantize/quantize nodes around it (hil.aot.neutron_sim_qdq): a float operator stays on the
    CPU, as no Neutron runs one, so a float program gives no kernel at all."""
    if not is_quantized_graph(nodes):
        return []
    taken: set[Node] = set()
    kernels: list[Kernel] = []
    for node in nodes:
        if node in taken or (code := _anchor_code(node)) is None:
            continue
        group = [node]
        if code is FunctionCode.FULLY_CONNECTED:
            group[:0] = [a for a in node.args if isinstance(a, Node) and _is_weight_transpose(a)]
        tail = node
        if (item := _first_output_getitem(node)) is not None:
            group.append(item)
            tail = item
        if code in _MAC_ANCHORS and (bn := _only_user(tail)) is not None and op_name(bn) == _BATCH_NORM:
            if (item := _first_output_getitem(bn)) is not None:
                group += [bn, item]
                tail = item
        if code in _MAC_ANCHORS | {FunctionCode.ADD} and (act := _only_user(tail)) is not None:
            if act.op == "call_function" and op_name(act) in _ACTIVATIONS:
                group.append(act)
        cluster = qdq_cluster(node, group[-1])
        if cluster is None:
            continue  # a float operator: Neutron runs int8 only
        quantizes = list(group[-1].users)
        group = [n for n in cluster if n not in quantizes] + group + quantizes
        group = [n for n in group if n not in taken]
        taken.update(group)
        real = [n for n in group if not _is_getitem(n)]
        handles: list[int] = []
        for n in real:
            h = n.meta.get("debug_handle")
            for one in h if isinstance(h, (tuple, list)) else ([h] if isinstance(h, int) else []):
                if one not in handles:  # a decomposed linear gives permute and addmm the same handle
                    handles.append(one)
        kernels.append(
            Kernel(len(kernels), int(code), code.name, [op_type(n) for n in real], handles, quantized_dtype(quantizes),
                   nodes=group, **_sizes(node, code))
        )
    return kernels


class _KernelMembers(OperatorSupportBase):
    """Supported = belongs to some kernel of the whole graph (decided once, up front)."""

    def __init__(self, members: set[Node]) -> None:
        super().__init__()
        self._members = members

    def is_node_supported(self, submodules, node: Node) -> bool:  # noqa: ANN001 - torch signature
        return node in self._members


@final
class NeutronSimPartitioner(Partitioner):
    """Tags the operators the (simulated) Neutron NPU runs; everything else stays on the CPU."""

    def __init__(self, compile_specs: list[CompileSpec] | None = None) -> None:
        super().__init__()
        self.delegation_spec = DelegationSpec(BACKEND_ID, list(compile_specs or []))

    def partition(self, exported_program: ExportedProgram) -> PartitionResult:
        graph_module = exported_program.graph_module
        nodes = [n for n in graph_module.graph.nodes if n.op == "call_function"]
        members = {n for k in group_kernels(nodes) for n in k.nodes}
        partitions = CapabilityBasedPartitioner(
            graph_module, _KernelMembers(members), allows_single_node_partition=True
        ).propose_partitions()
        tags: dict[str, DelegationSpec] = {}
        for partition in partitions:
            tag = f"neutron_sim_{partition.id}"
            for node in partition.nodes:
                node.meta["delegation_tag"] = tag
            tags[tag] = self.delegation_spec
        tag_constant_data(exported_program)
        return PartitionResult(tagged_exported_program=exported_program, partition_tags=tags)


@final
class NeutronSimBackend(BackendDetails):
    """Simulated Neutron backend: JSON kernel list as payload, real-style kernel -> debug-handle map."""

    @staticmethod
    def preprocess(edge_program: ExportedProgram, compile_specs: list[CompileSpec]) -> PreprocessResult:
        nodes = [n for n in edge_program.graph.nodes if n.op == "call_function"]
        kernels = group_kernels(nodes)
        covered = {n for k in kernels for n in k.nodes}
        stray = [op_type(n) for n in nodes if n not in covered and not _is_getitem(n)]
        if stray or not kernels:
            raise RuntimeError(f"{BACKEND_ID}: delegated region has ops outside any kernel: {stray or 'no kernels'}")
        payload = {
            "format": PAYLOAD_FORMAT,
            "backend": BACKEND_ID,
            "simulated": True,
            "compile_specs": {s.key: s.value.decode(errors="replace") for s in compile_specs},
            "kernels": [k.to_json() for k in kernels],
        }
        debug_handle_map: dict[int, tuple[int, ...]] = {k.index: tuple(k.debug_handles) for k in kernels}
        debug_handle_map[len(kernels)] = ()  # the profiling dump event, as the real backend adds
        header = json.dumps(payload, sort_keys=True).encode()
        return PreprocessResult(
            processed_bytes=header + PAYLOAD_SEPARATOR + _int8_weights(edge_program),
            debug_handle_map=debug_handle_map,
        )


def neutron_sim_partitioners(compile_specs: list[CompileSpec] | None = None) -> list[Partitioner]:
    """What ``export_model(delegate="neutron-sim")`` passes to ``to_edge_transform_and_lower``."""
    return [NeutronSimPartitioner(compile_specs)]


def _int8_weights(edge_program: ExportedProgram) -> bytes:
    """The delegated constants quantized to int8 per tensor, as the NPU would hold them.

    They make the payload (and so the .pte and the board's model size) as large as a real Neutron
    program's weights would be; the simulation never reads them back.
    """
    import torch

    blobs = []
    for tensor in [*edge_program.state_dict.values(), *edge_program.constants.values()]:
        if isinstance(tensor, torch.Tensor) and tensor.is_floating_point() and tensor.numel():
            tensor = tensor.detach()
            scale = float(tensor.abs().max()) or 1.0
            blobs.append((tensor / scale * 127).round().to(torch.int8).flatten().numpy().tobytes())
    return b"".join(blobs)


def parse_payload(processed: bytes) -> dict:
    """Decode a NeutronSimBackend payload's header; raises ValueError if the bytes are something else."""
    try:
        payload = json.loads(processed.split(PAYLOAD_SEPARATOR, 1)[0])
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"not a {BACKEND_ID} payload: {exc}") from None
    if not isinstance(payload, dict) or payload.get("format") not in PAYLOAD_FORMATS:
        raise ValueError(f"not a {BACKEND_ID} payload (format {payload.get('format') if isinstance(payload, dict) else None!r})")
    return payload


def payload_of(program: schema.Program, delegate: schema.BackendDelegate) -> dict:
    """The decoded payload of one delegate of a serialized program (inline data, as export writes it)."""
    if delegate.id != BACKEND_ID:
        raise ValueError(f"delegate is {delegate.id!r}, not {BACKEND_ID}")
    if delegate.processed.location != schema.DataLocation.INLINE:
        raise ValueError("delegate payload is in a segment, not inline (export with extract_delegate_segments=False)")
    return parse_payload(program.backend_delegate_data[delegate.processed.index].data)


def _after_lowering(edge: object, executorch_manager: object) -> dict:
    """Facts for CompiledModel.extra: per delegate call, its kernels (what the real log's map holds)."""
    program = executorch_manager.executorch_program
    plan = program.execution_plan[0]
    calls = []
    for instr_id, instr in enumerate(plan.chains[0].instructions):
        if isinstance(instr.instr_args, schema.DelegateCall):
            payload = payload_of(program, plan.delegates[instr.instr_args.delegate_index])
            calls.append({"instruction_id": instr_id, "kernels": [
                {key: k[key] for key in ("index", "function", "op_types", "debug_handles")} for k in payload["kernels"]]})
    return {"neutron_sim": {"backend": BACKEND_ID, "simulated": True, "delegate_calls": calls}}


def _edge_nodes(edge: object) -> list[Node]:
    return list(edge.exported_program().graph.nodes)


def _lowering_plan(source: object, options: dict) -> LoweringPlan:
    """`export_model(delegate="neutron-sim")`: the simulated partitioner; with `quantize`, a stand-in for
    NeutronQuantizer first (its scheme: hil.aot.quantize.neutron_scheme_quantizer), and then only the int8
    operators are delegated."""
    reasons: dict[str, str] = {}
    notes: list[str] = []

    def read_reasons(edge: object) -> object:
        """Why each operator stayed on the CPU, read from the lowered edge graph before to_executorch rewrites it;
        and the run's note when the NPU got nothing (a float program)."""
        nodes = _edge_nodes(edge)
        reasons.update(cpu_reasons(nodes))
        note = delegate_note(nodes, any("executorch_call_delegate" in str(n.target) for n in nodes))
        notes.extend([note] if note else [])
        return edge

    def after(edge: object, executorch_manager: object) -> dict:
        extra = {**_after_lowering(edge, executorch_manager), "cpu_reasons": dict(reasons)}
        return {**extra, "delegate_note": notes[0]} if notes else extra

    plan = LoweringPlan(partitioners=neutron_sim_partitioners(), after_lowering=after, edge_transform=read_reasons)
    if quantize.wants_quantization(options):
        plan.quantize = pt2e_hook(plan, options, quantize.neutron_scheme_quantizer, quantize.NEUTRON_SCHEME,
                                  stand_in_for="NeutronQuantizer")
    return plan


register_lowering("neutron-sim", _lowering_plan)
