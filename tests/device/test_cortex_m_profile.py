"""int8 MLPerf Tiny models lowered with `--delegate cortex-m` run on the runtime image's CMSIS-NN kernels.

Checked against what the product did not compute: the operators of ExecuTorch's own deserialized program
(`executorch.exir._serialize`), the events of the ETDump as ExecuTorch's Inspector reads them, the layers of the
eager model counted here, and the outputs of the quantized eager module this file makes itself with ExecuTorch's
CortexMQuantizer (PT2E on the same model, weights, inputs and calibration data), compared in its output's
quantization steps (LSB: the scale of the program's last dequantize, read here from the converted graph).

One model per test, smallest first: each is a QEMU boot under icount. The bound: CMSIS-NN requantizes with
fixed-point multipliers and shifts where the reference computes in float and rounds once, so an output may differ
by a rounding step per layer; LSB_BOUND (docs/qemu-runtime.md, "int8 on CMSIS-NN") is what these models must keep.
"""

from __future__ import annotations

from collections import Counter

import pytest
import torch

pytestmark = pytest.mark.device

LSB_BOUND = 2.0
# Smallest first (multiply-accumulates: the autoencoder ~0.27 M, DS-CNN 2.7 M, MobileNetV1 0.25 ~7.5 M, ResNet8
# 12.5 M). DS-CNN's one-channel input is the case of hil/aot/dim_order.py (docs/qemu-runtime.md).
MODELS = ["deep_autoencoder", "ds_cnn", "mobilenet_v1_025", "resnet8"]
# Float operators that would mean a layer ran on the portable kernels, not CMSIS-NN.
_FLOAT_COMPUTE = ("aten::convolution", "aten::linear", "aten::addmm", "aten::mm", "aten::avg_pool2d",
                  "aten::max_pool2d", "aten::_adaptive_avg_pool2d", "aten::mean")


@pytest.fixture(scope="module", params=MODELS)
def cortex_m_run(request, hil_board_config, tmp_path_factory):
    """One run per model, shared by the module's tests (a module-scoped stand-in for hil_profile)."""
    if hil_board_config.kind != "qemu":
        pytest.skip("the CMSIS-NN kernels run here on the QEMU runtime image")
    from hil.run.pipeline import RunRequest, run_profile

    out = tmp_path_factory.mktemp(f"cortex_m_{request.param}")
    return run_profile(RunRequest(model=request.param, board=hil_board_config, out_dir=out, delegate="cortex-m",
                                  iterations=1, required_firmware=None))


def _program_operators(pte_bytes: bytes) -> list[str]:
    """The operators of the program as ExecuTorch's own deserializer reads them: `name.overload`, in chain order."""
    from executorch.exir._serialize._program import deserialize_pte_binary

    program = deserialize_pte_binary(pte_bytes).program
    plan = program.execution_plan[0]
    names = [f"{op.name}.{op.overload}" if op.overload else op.name for op in plan.operators]
    called = []
    for chain in plan.chains:
        for instruction in chain.instructions:
            op_index = getattr(instruction.instr_args, "op_index", None)
            if op_index is not None:
                called.append(names[op_index])
    return called


def _layers(module: torch.nn.Module) -> Counter[str]:
    """The eager model's layers by the CMSIS-NN kernel each must become, counted here."""
    found: Counter[str] = Counter()
    for layer in module.modules():
        if isinstance(layer, torch.nn.Conv2d):
            depthwise = layer.groups == layer.in_channels  # the backend's rule (a one-channel conv is depthwise)
            found["cortex_m::quantized_depthwise_conv2d" if depthwise else "cortex_m::quantized_conv2d"] += 1
        elif isinstance(layer, torch.nn.Linear):
            found["cortex_m::quantized_linear"] += 1
        elif isinstance(layer, torch.nn.AvgPool2d):
            found["cortex_m::quantized_avg_pool2d"] += 1
        elif isinstance(layer, torch.nn.MaxPool2d):
            found["cortex_m::quantized_max_pool2d"] += 1
    return found


def _model(name: str):
    from hil.aot.models import load_model

    return load_model(name)


def test_every_conv_linear_and_pool_is_a_cmsis_nn_kernel_in_the_program_and_the_etdump(cortex_m_run):
    called = [name.removesuffix(".out") for name in _program_operators((cortex_m_run.out_dir / "model.pte").read_bytes())]
    assert not [name for name in called if name.startswith(_FLOAT_COMPUTE)], called
    expected = _layers(_model(cortex_m_run.profile["model"]).module)
    assert expected, "the model has no conv/linear/pool layer to check"
    assert Counter(name for name in called if name in expected) == expected

    # The ETDump, read by ExecuTorch's Inspector with the run's ETRecord: one event per kernel call, named after it.
    from executorch.devtools import Inspector

    inspector = Inspector(etdump_path=str(cortex_m_run.out_dir / "trace.etdump"),
                          etrecord=str(cortex_m_run.out_dir / "etrecord.bin"))
    (block,) = [b for b in inspector.event_blocks if b.name == "Execute"]
    ran = Counter(event.name for event in block.events)
    for kernel, count in expected.items():
        assert ran[f"native_call_{kernel.split('::')[1]}.out"] == count, (kernel, ran)


def test_the_profile_names_the_kernel_and_the_users_module(cortex_m_run):
    rows = [e for e in cortex_m_run.profile["events"] if e["kind"] == "cpu_op" and "quantized_" in e["name"]]
    assert rows
    module = _model(cortex_m_run.profile["model"]).module
    names = {name for name, _ in module.named_modules() if name}
    for row in rows:
        assert row["modules"], f"{row['name']} carries no module of the user's model"
        assert any(path.split(".", 1)[-1] in names or path in names for path in _paths(row["modules"])), row


def _paths(modules) -> list[str]:
    return [m if isinstance(m, str) else str(m.get("path") or m.get("name") or m) for m in modules]


def _quantized_reference(name: str):
    """The quantized eager module made here as ExecuTorch's Cortex-M flow makes it, its outputs on the example
    inputs, and the scale of its output's last dequantize (one LSB)."""
    from executorch.backends.cortex_m.quantizer.quantizer import CortexMQuantizer
    from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e

    source = _model(name)

    class Wrapped(torch.nn.Module):
        def __init__(self, inner):
            super().__init__()
            self.inner = inner.to(memory_format=torch.channels_last)

        def forward(self, *xs):
            return self.inner(*(x.to(memory_format=torch.channels_last) if x.dim() == 4 else x for x in xs))

    captured = torch.export.export(Wrapped(source.module), source.example_inputs).module(check_guards=False)
    prepared = prepare_pt2e(captured, CortexMQuantizer())
    prepared(*source.example_inputs)
    converted = convert_pt2e(prepared)
    with torch.no_grad():
        outputs = converted(*source.example_inputs)
    dequantizes = [n for n in converted.graph.nodes if n.op == "call_function" and "dequantize_per_tensor" in str(n.target)]
    (last,) = [n for n in dequantizes if any(user.op == "output" for user in n.users)]
    return outputs, float(last.args[1])


def test_outputs_are_within_the_lsb_bound_of_the_quantized_eager_module(cortex_m_run):
    target = torch.load(cortex_m_run.out_dir / "outputs.pt", weights_only=True)
    target = target[0] if isinstance(target, (tuple, list)) else target
    reference, scale = _quantized_reference(cortex_m_run.profile["model"])
    reference = reference[0] if isinstance(reference, (tuple, list)) else reference
    error_lsb = float((target.float() - reference.float()).abs().max()) / scale
    assert error_lsb <= LSB_BOUND, f"{cortex_m_run.profile['model']}: {error_lsb:.2f} LSB"
