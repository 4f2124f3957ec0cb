"""A user's model that quantized itself (PT2E, ExecuTorch's XNNPACKQuantizer) runs on the QEMU runtime image's
quantized portable kernels, through `hil_profile`, with its numerics in the int8 domain.

Truths computed here, not by the product: the int8 module's outputs (tests/fixtures/xnnpack_quantized.py, run in
this test), the float model's, and the scale of the converted module's last dequantize (read from its graph); the
kernel names from the Inspector's own events of the run's ETDump.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
import torch

pytestmark = pytest.mark.device

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "xnnpack_quantized.py"


def _fixture():
    spec = importlib.util.spec_from_file_location("xnnpack_quantized_fixture", FIXTURE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_self_quantized_model_runs_int8_on_the_runtime_image(hil_profile, hil_board_config) -> None:
    if hil_board_config.kind != "qemu":
        pytest.skip("the quantized portable kernels run here on the QEMU runtime image")
    result = hil_profile(f"{FIXTURE}:with_float", delegate="none", iterations=1, required_firmware=None)
    profile = result.profile
    assert profile.firmware == "runtime"
    assert profile.quantization["quantizer"] == "user"

    fixture = _fixture()
    model, inputs = fixture.float_model()
    int8_module = fixture.quantized(model, inputs)
    output = next(n for n in int8_module.graph.nodes if n.op == "output")
    last = output.args[0][0] if isinstance(output.args[0], (tuple, list)) else output.args[0]
    scale = float(last.args[1])
    target = torch.load(result.out_dir / "outputs.pt", weights_only=True)[0]
    # within the documented bound (2 LSB) of the int8 module computed here; and what the product says agrees
    assert float((target - int8_module(*inputs)).abs().max()) / scale <= 2.0
    section = profile.numerics["int8"]
    assert section["within_bound"] is True and list(section["output_scales"]) == [pytest.approx(scale)]
    with torch.no_grad():
        float_lsb = float((target - model(*inputs)).abs().max()) / scale
    assert section["vs_float_model"]["max_abs_error_lsb"] == pytest.approx(float_lsb, rel=1e-6)

    from executorch.devtools import Inspector

    inspector = Inspector(etdump_path=str(result.out_dir / "trace.etdump"),
                          etrecord=str(result.out_dir / "etrecord.bin"))
    names = {event.name for block in inspector.event_blocks for event in block.events}
    assert {"native_call_quantize_per_tensor.out", "native_call_dequantize_per_tensor.out"} <= names
