"""The `cortex-m` delegate: int8 operators on Arm's CMSIS-NN kernels, as a tuned Cortex-M33 product ships them.

Why a lowering of its own: ExecuTorch's Cortex-M backend (executorch.backends.cortex_m) delegates nothing; it
quantizes with its own `CortexMQuantizer` and then rewrites the edge graph in place (`CortexMPassManager`) into
`cortex_m::quantized_conv2d`, `quantized_depthwise_conv2d`, `quantized_linear`, pooling, add ... operators, which
the runtime image registers from `cortex_m_kernels` (CMSIS-NN, built for the M33 with its DSP extension). The
steps are the backend's own (its test harness, backends/cortex_m/test/tester.py: quantize, to_edge with
`cortex_m_edge_compile_config()`, then the pass manager on the edge program), with the target named: the M33,
whose CMSIS-NN variants (DSP) the firmware is compiled for, so the scratch buffers the passes size match the
kernels that run.

Layout. The backend turns a convolution into a CMSIS-NN kernel only when its tensors are channels_last; in NCHW it
stays a float `aten.convolution` without a word. Here the model's weights are made channels_last and its 4-D
inputs are converted inside the exported program (`ChannelsLastInputs`), so the program still takes the NCHW
inputs the user gives (the harness writes them as they are) and the conversion is a portable operator of its own
in the profile (a one-channel input's ambiguous channels_last dim order is renamed at memory planning:
hil.aot.dim_order). Whatever compute operator still stays float after the passes is said (a warning naming each) and
recorded in the entry's `extra["float_operators"]`.

The ETRecord holds the transformed edge program; the ETDump's events name the kernel that ran
(`native_call_quantized_conv2d.out`), and the Inspector maps each, by its debug handle, to the user's module.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import torch
from torch import nn

from hil.aot import quantize
from hil.aot.export import LoweringPlan, pt2e_hook, register_lowering
from hil.aot.models import ModelSource
from hil.base import log

if TYPE_CHECKING:
    from executorch.exir import EdgeProgramManager

DELEGATE = "cortex-m"
# backends/cortex_m/quantizer/quantizer.py (CortexMQuantizer.__init__): convolutions with INT8_PER_CHANNEL_CONFIG,
# every other operator with INT8_PER_TENSOR_CONFIG (quantization_configs.py).
SCHEME = ("int8; convolution weights symmetric per-channel, other weights symmetric per-tensor; "
          "activations asymmetric per-tensor")
# Float compute operators that the Cortex-M passes should have replaced; one left in the edge graph ran on the
# portable float kernels, not on CMSIS-NN.
_COMPUTE = ("convolution", "linear", "addmm", "mm", "bmm", "max_pool2d", "avg_pool2d", "adaptive_avg_pool2d",
            "mean", "add", "mul", "softmax", "_softmax", "hardtanh", "clamp", "relu")


class ChannelsLastInputs(nn.Module):
    """The user's module with its 4-D inputs made channels_last first: what the backend needs for its CMSIS-NN
    convolutions, while the program keeps the NCHW inputs the user gives (a dim-order copy at its start)."""

    def __init__(self, module: nn.Module) -> None:
        super().__init__()
        self.module = module.to(memory_format=torch.channels_last)

    def forward(self, *inputs: torch.Tensor) -> Any:
        return self.module(*(x.to(memory_format=torch.channels_last) if x.dim() == 4 else x for x in inputs))


def cortex_m_quantizer() -> Any:
    from executorch.backends.cortex_m.quantizer.quantizer import CortexMQuantizer

    return CortexMQuantizer()


def run_passes(edge: "EdgeProgramManager") -> "EdgeProgramManager":
    """The Cortex-M passes on the edge program, for the M33 (as the backend's tester does: the forward method is
    replaced by the transformed program), and the ETRecord's edge program with it: the Inspector maps each event to
    the transformed graph's node, whose target is the kernel that ran and whose module stack is the user's."""
    from executorch.backends.cortex_m.passes.cortex_m_pass_manager import CortexMPassManager
    from executorch.backends.cortex_m.target_config import CortexM, CortexMTargetConfig

    manager = CortexMPassManager(edge.exported_program(), CortexMPassManager.pass_list,
                                 target_config=CortexMTargetConfig(cpu=CortexM.M33))
    edge._edge_programs["forward"] = manager.transform()
    record = edge._etrecord
    if record is not None:  # the ETRecord's edge program must be the one the .pte was made from (hil.analysis checks)
        record.edge_dialect_program = None  # add_edge_dialect_program refuses to replace one
        record.add_edge_dialect_program(copy.deepcopy(edge))
    return edge


def float_operators(edge: "EdgeProgramManager") -> list[str]:
    """The float compute operators left in the lowered edge graph (aten namespace), in graph order."""
    left = []
    for node in edge.exported_program().graph.nodes:
        target = str(getattr(node.target, "_op", node.target))  # an EdgeOpOverload's str is its schema
        if node.op == "call_function" and target.startswith("aten.") and target.split(".")[1] in _COMPUTE:
            left.append(f"{node.name} ({target})")
    return left


def _after_lowering(planning: Any) -> Callable[["EdgeProgramManager", Any], dict[str, Any]]:
    def after(edge: "EdgeProgramManager", _program: Any) -> dict[str, Any]:
        left = float_operators(edge)
        if left:
            log.warning(f"delegate '{DELEGATE}': {len(left)} operator(s) stayed float (portable kernels, not "
                        f"CMSIS-NN): {', '.join(left)}")
        return {"float_operators": left, "dim_orders_renamed": list(planning.renamed)}

    return after


def _plan(source: ModelSource, options: Mapping[str, Any]) -> LoweringPlan:
    """`export_model(delegate="cortex-m")`: always int8 (CMSIS-NN runs no float operator), with CortexMQuantizer on
    the calibration data the options name; a model its factory quantized already is lowered as it is."""
    from executorch.backends.cortex_m.edge_compile_config import cortex_m_edge_compile_config

    from hil.aot.dim_order import AcceptedDimOrderPlanning

    planning = AcceptedDimOrderPlanning()  # a one-channel channels_last tensor's dim order, named as the runtime wants
    plan = LoweringPlan(compile_config=cortex_m_edge_compile_config(), edge_transform=run_passes,
                        after_lowering=_after_lowering(planning), memory_planning=planning)
    if quantize.user_record(source.module) is None:
        hook = pt2e_hook(plan, options, cortex_m_quantizer, SCHEME)
        plan.quantize = lambda module, inputs: hook(ChannelsLastInputs(copy.deepcopy(module)).eval(), inputs)
    return plan


register_lowering(DELEGATE, _plan)
