"""Which operators of an int8 program the simulated Neutron NPU takes: those between dequantize and quantize nodes.

Why: the eIQ Neutron NPU runs quantized operators only. NXP's partitioner delegates a compute node only when it
sits in a "QDQ cluster" -- dequantize nodes producing its inputs, the compute node, auxiliary nodes (getitem,
relu, hardtanh, permute_copy, view_copy, ...), quantize nodes taking its outputs
(executorch/backends/nxp/neutron_partitioner.py: QDQClusterRecognizer, and `_is_node_supported_compute`, which
requires `_is_node_quantized`). The simulation applies the same rule to its own kernels (hil.aot.neutron_sim), so a
quantized program's float operators (a softmax, a pad between quantize/dequantize kept in float) stay on the CPU,
and the kernel's nodes include its dequantize/quantize nodes, as the real backend's do.
"""

from __future__ import annotations

import operator

from torch.fx import Node

_DEQUANTIZE = ("dequantize_per_tensor", "dequantize_per_channel")
_QUANTIZE = ("quantize_per_tensor", "quantize_per_channel")
# Nodes between a dequantize and its compute node that move data only (the weight transpose of a linear).
_PASS_THROUGH = ("permute_copy", "view_copy", "squeeze_copy", "unsqueeze_copy", "clone")
FLOAT_REASON = "float operator: Neutron runs int8 only"
# A float program: nothing is delegated (no Neutron runs a float operator); the user's way to the NPU is --quantize.
FLOAT_PROGRAM_REASON = "float operator: the Neutron NPU runs int8 only; --quantize quantizes as NXP's flow does"
FLOAT_PROGRAM_NOTE = ("float program: nothing for the simulated Neutron NPU (it runs int8 only), every operator "
                      "ran on the CPU; --quantize quantizes as NXP's flow does")
NOTHING_DELEGATED_NOTE = "int8 program: no operator of it is one the simulated Neutron NPU runs; all ran on the CPU"


def _named(node: object, names: tuple[str, ...]) -> bool:
    """True for a call of quantized_decomposed.<one of names> ('quantized_decomposed.dequantize_per_tensor.default')."""
    if not isinstance(node, Node) or node.op != "call_function":
        return False
    parts = getattr(node.target, "__name__", str(node.target)).split(".")  # an EdgeOpOverload's str is longer
    return len(parts) >= 2 and parts[0] == "quantized_decomposed" and parts[1] in names


def is_dequantize(node: object) -> bool:
    return _named(node, _DEQUANTIZE)


def is_quantize(node: object) -> bool:
    return _named(node, _QUANTIZE)


def is_quantized_graph(nodes: list[Node]) -> bool:
    """True for a program holding dequantize nodes: the simulated NPU then takes QDQ clusters only."""
    return any(is_dequantize(node) for node in nodes)


def _input_part(arg: object) -> list[Node] | None:
    """The nodes feeding one tensor input of a compute node from a dequantize: [dequantize, pass-through...];
    [] for a float constant (a bias the quantizer left float); None when the input is a float activation."""
    if not isinstance(arg, Node):
        return []
    if arg.op == "placeholder":
        return []  # a lifted parameter: a float bias the quantizer left float
    chain: list[Node] = []
    node = arg
    while node.op == "call_function" and any(name in str(node.target) for name in _PASS_THROUGH) \
            and len(node.users) == 1 and isinstance(node.args[0], Node):
        chain.insert(0, node)
        node = node.args[0]
    return [node, *chain] if is_dequantize(node) and len(node.users) == 1 else None


def qdq_cluster(anchor: Node, tail: Node) -> list[Node] | None:
    """The dequantize (and pass-through) nodes before `anchor` and the quantize nodes after `tail` (the last node
    of its kernel), or None when the kernel is not int8 between dequantize and quantize: a float operator."""
    before: list[Node] = []
    for arg in anchor.args:
        for one in (arg if isinstance(arg, (list, tuple)) else [arg]):
            part = _input_part(one)
            if part is None:
                return None
            before += [n for n in part if n not in before]
    after = list(tail.users)
    if not any(is_dequantize(n) for n in before) or not after or not all(is_quantize(n) for n in after):
        return None
    return before + after


BOUNDARY_REASON = "int8/float conversion around the NPU"
UNSUPPORTED_REASON = "not an operator the simulated NPU runs"


def cpu_reasons(nodes: list[Node]) -> dict[str, str]:
    """Why each operator left on the CPU of a lowered program is there, by its short name (`_softmax`), as
    the table shows it: any operator of a float program (nothing of it is delegated), a quantize/dequantize at the
    NPU's boundary, a float operator of an int8 program (Neutron runs int8 only), or an int8 operator the simulated
    NPU does not run."""
    int8 = is_quantized_graph(nodes)
    reasons: dict[str, str] = {}
    for node in nodes:
        if node.op != "call_function" or "executorch_call_delegate" in str(node.target) \
                or node.target is operator.getitem:
            continue
        name = getattr(node.target, "__name__", str(node.target)).split(".")
        short = name[1] if len(name) >= 3 else name[-1]
        if not int8:
            reasons.setdefault(short, FLOAT_PROGRAM_REASON)
        elif is_dequantize(node) or is_quantize(node):
            reasons.setdefault(short, BOUNDARY_REASON)
        elif int8 and qdq_cluster(node, node) is None:
            reasons.setdefault(short, FLOAT_REASON)
        else:
            reasons.setdefault(short, UNSUPPORTED_REASON)
    return reasons


def int8_bytes(node: object) -> int | None:
    """The stored bytes of a dequantized constant (its int8 input), also through a pass-through (the weight transpose
    of a linear), or None for any other node."""
    while isinstance(node, Node) and node.op == "call_function" and node.args and isinstance(node.args[0], Node) \
            and any(name in str(node.target) for name in _PASS_THROUGH):
        node = node.args[0]
    if not is_dequantize(node):
        return None
    source = node.args[0]  # type: ignore[union-attr]
    val = source.meta.get("val") if isinstance(source, Node) else None
    return None if val is None else int(val.numel() * val.element_size())


def quantized_dtype(quantize_nodes: list[Node]) -> str:
    """The integer type a kernel's quantize nodes make ('int8'), as the payload records it: the cost model counts
    its MACs at the NPU's int8 rate, and the replay refuses a kernel of any other type."""
    names = {str(node.args[5]).removeprefix("torch.") for node in quantize_nodes if len(node.args) > 5}
    return names.pop() if len(names) == 1 else "mixed"


def delegate_note(nodes: list[Node], delegated: bool) -> str | None:
    """The once-per-run note when the simulated NPU got nothing of the program (None when it got some)."""
    if delegated:
        return None
    return NOTHING_DELEGATED_NOTE if is_quantized_graph(nodes) else FLOAT_PROGRAM_NOTE
