"""The `cortex-m` lowering: a user's NCHW model becomes CMSIS-NN operators, and a layer that stays float is said.

Truths: the operators of ExecuTorch's own deserialized program (`executorch.exir._serialize`), the layers of the
tiny models written here, and the edge graph of ExecuTorch's own passes."""

from __future__ import annotations

import textwrap

import pytest

from hil.aot.export import export_model

MODEL = textwrap.dedent("""\
    import torch


    class ConvLinear(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = torch.nn.Conv2d(3, 8, 3, padding=1)
            self.fc = torch.nn.Linear(8 * 8 * 8, 10)

        def forward(self, x):
            return self.fc(torch.relu(self.conv(x)).flatten(1))


    def factory():
        torch.manual_seed(0)
        return ConvLinear().eval(), (torch.randn(1, 3, 8, 8),)
    """)


def _operators(pte: bytes) -> list[str]:
    from executorch.exir._serialize._program import deserialize_pte_binary

    plan = deserialize_pte_binary(pte).program.execution_plan[0]
    return sorted(f"{op.name}.{op.overload}" for op in plan.operators)


@pytest.fixture(scope="module")
def lowered(tmp_path_factory):
    folder = tmp_path_factory.mktemp("cortex_m")
    (folder / "tiny.py").write_text(MODEL)
    return export_model(f"{folder / 'tiny.py'}:factory", delegate="cortex-m", cache=folder / "cache")


def test_an_nchw_conv_and_linear_become_cmsis_nn_kernels_and_the_program_keeps_nchw_inputs(lowered) -> None:
    import torch

    operators = _operators(lowered.pte_path.read_bytes())
    assert "cortex_m::quantized_conv2d.out" in operators and "cortex_m::quantized_linear.out" in operators
    assert not [op for op in operators if op.startswith(("aten::convolution", "aten::linear", "aten::addmm"))]
    assert lowered.extra["float_operators"] == []
    # The program still takes what the user gives: its input is the NCHW example input, byte for byte.
    from executorch.runtime import Runtime  # noqa: F401  (the program is read, not run: no cortex_m kernels here)
    from executorch.exir._serialize._program import deserialize_pte_binary

    plan = deserialize_pte_binary(lowered.pte_path.read_bytes()).program.execution_plan[0]
    (first,) = plan.inputs
    tensor = plan.values[first].val
    assert list(tensor.sizes) == [1, 3, 8, 8] and list(tensor.dim_order) == [0, 1, 2, 3]
    (example,) = torch.load(lowered.inputs_path, weights_only=True)
    assert example.is_contiguous()


def test_the_quantization_is_recorded_as_cortex_m_quantizers(lowered) -> None:
    record = lowered.quantization
    assert record is not None and record.quantizer == "CortexMQuantizer" and not record.stand_in
    assert record.calibration == "example inputs" and record.calibration_batches == 1


def test_a_convolution_left_in_nchw_is_named_as_float(caplog) -> None:
    """Without the channels_last conversion the backend leaves the convolution a float aten.convolution (its own
    passes, on its own quantizer's graph): float_operators names it rather than letting it pass."""
    import torch
    from executorch.backends.cortex_m.edge_compile_config import cortex_m_edge_compile_config
    from executorch.exir import to_edge

    from hil.aot import cortex_m, quantize

    torch.manual_seed(0)
    module = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3)).eval()
    inputs = (torch.randn(1, 3, 8, 8),)
    calibration = quantize.Calibration((inputs,), "example inputs", "")
    converted = quantize.quantize_pt2e(module, inputs, cortex_m.cortex_m_quantizer(), calibration)
    edge = cortex_m.run_passes(to_edge(torch.export.export(converted, inputs),
                                       compile_config=cortex_m_edge_compile_config()))
    left = cortex_m.float_operators(edge)
    assert len(left) == 1 and "aten.convolution" in left[0]
    with caplog.at_level("WARNING", logger="hil"):
        from hil.aot.dim_order import AcceptedDimOrderPlanning

        assert cortex_m._after_lowering(AcceptedDimOrderPlanning())(edge, None) == {"float_operators": left,
                                                                                   "dim_orders_renamed": []}
    assert f"delegate 'cortex-m': 1 operator(s) stayed float (portable kernels, not CMSIS-NN): {left[0]}" in caplog.text


def test_a_fresh_process_reads_the_etrecords_cortex_m_operators(lowered) -> None:
    """`hil run` analyses in a process that never lowered anything: the ETRecord's cortex_m operators must be
    real there (else its graph names no op and the run is refused as an ETRecord of another program). The truth:
    the .pte's operators from ExecuTorch's deserializer, in this process."""
    import subprocess
    import sys

    from hil.base.paths import REPO_ROOT

    script = ("import sys\nfrom hil.analysis.blocks import read_etrecord, edge_programs\n"
              "graph = edge_programs(read_etrecord(__import__('pathlib').Path(sys.argv[1])))['forward'].graph\n"
              "print('\\n'.join(sorted({str(getattr(n.target, '_op', n.target)) for n in graph.nodes\n"
              "                          if n.op == 'call_function' and 'cortex_m' in str(n.target)})))\n")
    done = subprocess.run([sys.executable, "-c", script, str(lowered.etrecord_path)], capture_output=True, text=True,
                          timeout=300, cwd=REPO_ROOT)
    assert done.returncode == 0, done.stderr[-2000:]
    in_record = {line.split(".")[1] for line in done.stdout.split()}
    in_pte = {op.split("::")[1].split(".")[0] for op in _operators(lowered.pte_path.read_bytes()) if op.startswith("cortex_m")}
    assert in_record == in_pte and "quantized_conv2d" in in_record


ONE_CHANNEL = textwrap.dedent("""\
    import torch


    def factory():
        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Conv2d(1, 8, (5, 3), stride=2, padding=1), torch.nn.ReLU(),
                                    torch.nn.Flatten(), torch.nn.Linear(8 * 5 * 4, 4)).eval()
        return model, (torch.randn(1, 1, 12, 8),)
    """)


def test_a_one_channel_input_gets_dim_orders_the_runtime_accepts(tmp_path) -> None:
    """DS-CNN's case, small: the channels_last copy of a [1, 1, H, W] input has tied strides, from which ExecuTorch
    derives the dim order (0, 2, 1, 3); the portable _to_dim_order_copy asked for (0, 2, 3, 1) refuses that output.
    The truth: every tensor of the program as ExecuTorch's deserializer reads it is contiguous or channels_last
    (the two dim orders the runtime's is_contiguous_dim_order / is_channels_last_dim_order accept), and the one-
    channel copies are channels_last, the order the _to_dim_order_copy's own argument names."""
    from executorch.exir._serialize._program import deserialize_pte_binary

    (tmp_path / "one.py").write_text(ONE_CHANNEL)
    entry = export_model(f"{tmp_path / 'one.py'}:factory", delegate="cortex-m", cache=tmp_path / "cache")
    plan = deserialize_pte_binary(entry.pte_path.read_bytes()).program.execution_plan[0]
    orders = [(list(v.val.sizes), list(v.val.dim_order)) for v in plan.values if type(v.val).__name__ == "Tensor"]
    four_d = [(sizes, order) for sizes, order in orders if len(sizes) == 4]
    assert four_d and all(order in ([0, 1, 2, 3], [0, 2, 3, 1]) for _, order in four_d), four_d
    # The input stays NCHW; its channels_last copy (and the quantized copy of that) are (0, 2, 3, 1).
    assert [order for sizes, order in four_d if sizes == [1, 1, 12, 8]].count([0, 2, 3, 1]) == 2, four_d
    assert len(entry.extra["dim_orders_renamed"]) == 2
    assert all(line.endswith("(0, 2, 1, 3) -> (0, 2, 3, 1)") for line in entry.extra["dim_orders_renamed"])
    assert "cortex_m::quantized_depthwise_conv2d.out" in _operators(entry.pte_path.read_bytes())


@pytest.mark.parametrize(("shape", "order", "expected"), [
    ([1, 1, 49, 10], (0, 2, 1, 3), (0, 2, 3, 1)),  # channels_last strides (490, 1, 10, 1), sorted stably
    ([1, 1, 49, 10], (0, 2, 3, 1), None),           # already accepted
    ([1, 1, 49, 10], (0, 1, 2, 3), None),
    ([1, 64, 1, 1], (0, 2, 3, 1), None),
    ([2, 3, 1, 5], (0, 2, 1, 3), (0, 1, 2, 3)),     # the size-1 H moved: still the contiguous bytes, not channels_last
    ([1, 3, 4, 5], (0, 2, 1, 3), None),             # a real transpose: neither layout, left for the runtime to say
    ([1, 1, 4, 5, 6], (0, 2, 3, 1, 4), (0, 2, 3, 4, 1)),
    ([3, 1, 4], (1, 0, 2), (0, 1, 2)),
])
def test_only_another_name_of_an_accepted_layout_is_renamed(shape, order, expected) -> None:
    from hil.aot.dim_order import accepted_name

    assert accepted_name(shape, order) == expected
