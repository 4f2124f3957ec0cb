"""Memory planning that writes one of the two dim orders the runtime's kernels accept for every tensor whose layout
is one of them.

Why: a channels_last tensor with one channel (or another size-1 dimension between) has strides that tie, e.g.
shape [1, 1, 49, 10] with strides (490, 1, 10, 1); ExecuTorch derives the dim order by a stable sort of the strides
(exir/tensor.py, `dim_order_from_stride`), which gives (0, 2, 1, 3): the same bytes as channels_last (0, 2, 3, 1),
but a name the runtime does not accept where a kernel compares dim orders. DS-CNN's one-channel input, made
channels_last for the Cortex-M backend, is such a tensor: the portable `_to_dim_order_copy` kernel asked for
(0, 2, 3, 1) refuses an output whose dim order is (0, 2, 1, 3) (kernels/portable/cpu/util/copy_ops_util.cpp,
`check__to_dim_order_copy_args`: "Out tensor shall have same dim order as dim_order"), so the method fails.

The emitter writes each tensor's `TensorSpec.dim_order` (exir/emit/_emitter.py, `_tensor_spec_to_evalue`), and
memory planning is the last pass before it (exir/program/_program.py, `to_executorch`), so the renaming is done
there: after ExecuTorch's own planning, an ambiguous dim order is renamed to channels_last when it is the same
layout, else to contiguous when it is. Nothing moves in memory (the planned offsets and sizes are the planner's);
a dim order that is neither layout is left as it is, for the runtime to say.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

# ExecuTorch's own planner; imported where the lowering that needs it is planned (torch is loaded there anyway).
from executorch.exir.passes import MemoryPlanningPass
from executorch.exir.tensor import stride_from_dim_order


def same_layout(shape: Sequence[int], first: Sequence[int], second: Sequence[int]) -> bool:
    """True when two dim orders of `shape` put every element at the same offset: their orders agree once the
    dimensions of size 1 (whose stride no element uses) are left out."""
    return [d for d in first if shape[d] != 1] == [d for d in second if shape[d] != 1]


def accepted_name(shape: Sequence[int], dim_order: Sequence[int]) -> tuple[int, ...] | None:
    """The dim order the runtime accepts for this layout, when `dim_order` is another name of it; else None
    (already accepted, or a layout that is neither contiguous nor channels_last)."""
    rank = len(shape)
    contiguous = tuple(range(rank))
    candidates = [(0, *range(2, rank), 1)] if rank in (4, 5) else []  # channels_last first: the ties come from it
    candidates.append(contiguous)
    if tuple(dim_order) in candidates:
        return None
    return next((c for c in candidates if same_layout(shape, dim_order, c)), None)


def rename_specs(graph_module: Any) -> list[str]:
    """Renames the ambiguous dim orders of the graph's tensor specs in place; returns what was renamed
    (node name, old and new dim order), for the log."""
    renamed = []
    for node in graph_module.graph.nodes:
        specs = node.meta.get("spec")
        for spec in specs if isinstance(specs, (list, tuple)) else [specs]:
            if getattr(spec, "dim_order", None) is None or not hasattr(spec, "shape"):
                continue
            name = accepted_name(list(spec.shape), [int(d) for d in spec.dim_order])
            if name is not None:
                renamed.append(f"{node.name} {tuple(int(d) for d in spec.dim_order)} -> {name}")
                spec.dim_order = name
                spec.stride = tuple(stride_from_dim_order(list(spec.shape), list(name)))
    return renamed


class AcceptedDimOrderPlanning(MemoryPlanningPass):
    """ExecuTorch's memory planning, then `rename_specs`: the .pte names only dim orders the runtime accepts.
    `renamed` keeps what the last run renamed."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.renamed: list[str] = []

    def run(self, graph_module: Any, graph_signature: Any = None) -> Any:
        result = super().run(graph_module, graph_signature)
        self.renamed = rename_specs(result.graph_module)
        return result
