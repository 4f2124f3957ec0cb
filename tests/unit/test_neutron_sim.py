"""The simulated Neutron partitioner/backend, and the SDK-free parts of the real Neutron path."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
import torch
from torch import nn

from executorch.exir._serialize._program import deserialize_pte_binary

from hil.aot.export import export_model
from hil.aot.neutron_sdk import parse_neutron_map, parse_neutron_maps, sdk_available, sdk_reason
from hil.aot.quantize import options
from hil.aot.neutron_sim import BACKEND_ID, FunctionCode, payload_of
from hil.base.errors import ModelError

SMALL_CNN = Path(__file__).resolve().parents[1] / "fixtures" / "small_cnn.py"


class SmallCifar(nn.Module):
    """CifarNet's shape in small: pad, conv+relu, maxpool, pad, depthwise conv, flatten, linear, softmax."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3)
        self.dw = nn.Conv2d(8, 8, 3, groups=8)
        self.fc = nn.Linear(8 * 4 * 4, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = torch.relu(self.conv(nn.functional.pad(x, (1, 1, 1, 1))))
        x = nn.functional.max_pool2d(x, 2)
        x = self.dw(nn.functional.pad(x, (1, 1, 1, 1)))
        return torch.softmax(self.fc(torch.flatten(x, 1)), dim=1)


def lower(model: nn.Module, inputs: tuple, *, int8: bool = True):
    """The program neutron-sim makes of `model`: int8 (the stand-in quantizer, calibrated on `inputs`) or float."""
    from programs import lower_neutron_sim

    return lower_neutron_sim(model, inputs, int8=int8)


@pytest.fixture(scope="module")
def lowered():
    return lower(SmallCifar(), (torch.randn(1, 3, 8, 8),))


def payloads(prog) -> dict[int, dict]:
    """Instruction id -> decoded payload of each delegate call in the program."""
    program = deserialize_pte_binary(prog.buffer).program
    plan = program.execution_plan[0]
    out = {}
    for i, ins in enumerate(plan.chains[0].instructions):
        if hasattr(ins.instr_args, "delegate_index"):
            out[i] = payload_of(program, plan.delegates[ins.instr_args.delegate_index])
    return out


def cpu_ops(prog) -> set[str]:
    """ATen names of the operators the program calls on the CPU (its KernelCall instructions)."""
    plan = deserialize_pte_binary(prog.buffer).program.execution_plan[0]
    return {plan.operators[i.instr_args.op_index].name for i in plan.chains[0].instructions
            if hasattr(i.instr_args, "op_index")}


def test_supported_ops_delegated_rest_on_cpu(lowered) -> None:
    _, prog = lowered
    assert {"aten::constant_pad_nd", "aten::_softmax"} <= cpu_ops(prog)
    assert not {"aten::convolution", "aten::addmm", "aten::max_pool2d_with_indices"} & cpu_ops(prog)
    kernels = [k for p in payloads(prog).values() for k in p["kernels"]]
    codes = [k["function_code"] for k in kernels]
    assert codes == [FunctionCode.CONV2D, FunctionCode.MAX_POOL, FunctionCode.DEPTHWISE_CONV2D,
                     FunctionCode.FULLY_CONNECTED]
    assert {k["dtype"] for k in kernels} == {"int8"}
    conv_ops = [t for t in kernels[0]["op_types"] if not t.startswith("quantized_decomposed")]
    assert conv_ops == ["aten.convolution.default", "aten.relu.default"]  # fused activation
    assert kernels[0]["macs"] == 8 * 8 * 8 * 3 * 3 * 3  # out numel * Cin*kh*kw
    assert kernels[2]["macs"] == 8 * 4 * 4 * 1 * 3 * 3  # depthwise: one input channel per output
    # int8 weights (1 byte each) and the int32 bias the quantizer makes (4 bytes each)
    assert kernels[3]["macs"] == 10 * 128 and kernels[3]["weight_bytes"] == 10 * 128 * 1 + 10 * 4


def test_a_float_program_delegates_nothing_and_says_why(tmp_path) -> None:
    """No Neutron runs a float operator: ExecuTorch's own serialized program has no delegate call, its
    convolutions/linears/pools are CPU KernelCalls, each CPU operator's reason names the NPU's int8 rule, and the
    run's note (once) says the NPU had nothing; the table shows both."""
    from hil.aot.neutron_sim_qdq import FLOAT_PROGRAM_NOTE, FLOAT_PROGRAM_REASON
    from hil.cli.table import format_table
    from hil.records.profile_model import Profile
    from hil.run.folder import finish_profile

    compiled = export_model(f"{SMALL_CNN}:factory", delegate="neutron-sim", cache=tmp_path)
    program = deserialize_pte_binary(compiled.pte_path.read_bytes()).program
    plan = program.execution_plan[0]
    assert not plan.delegates and not program.backend_delegate_data
    cpu = {plan.operators[i.instr_args.op_index].name for i in plan.chains[0].instructions}
    assert {"aten::convolution", "aten::linear"} & cpu or {"aten::convolution", "aten::addmm"} <= cpu
    reasons = compiled.extra["cpu_reasons"]
    assert reasons["convolution"] == FLOAT_PROGRAM_REASON and set(reasons.values()) == {FLOAT_PROGRAM_REASON}
    assert "--quantize" in FLOAT_PROGRAM_REASON and "int8 only" in FLOAT_PROGRAM_REASON
    assert compiled.extra["delegate_note"] == FLOAT_PROGRAM_NOTE
    profile = finish_profile(Profile(model="small", cpu_fallback_ops=("aten.convolution.default",)).to_json(),
                             cpu_fallback_reasons=reasons, delegate_note=compiled.extra["delegate_note"])
    table = format_table(profile)
    assert f"CPU fallback ops: convolution ({FLOAT_PROGRAM_REASON})" in table
    assert table.count("nothing for the simulated Neutron NPU") == 1


def test_etrecord_delegate_map_has_kernels_plus_empty_dump_entry(lowered) -> None:
    _, prog = lowered
    delegate_map = prog.get_etrecord()._delegate_map["forward"]
    found = payloads(prog)
    assert sorted(delegate_map) == sorted(found)
    for instr_id, payload in found.items():
        entry = delegate_map[instr_id]
        assert entry["name"] == BACKEND_ID
        dmap = {int(k): tuple(v) for k, v in entry["delegate_map"].items()}
        n = len(payload["kernels"])
        assert sorted(dmap) == list(range(n + 1))
        assert dmap[n] == ()
        assert [dmap[k["index"]] for k in payload["kernels"]] == [tuple(k["debug_handles"]) for k in payload["kernels"]]
        assert all(dmap[i] for i in range(n))


def test_model_without_supported_ops_is_not_delegated() -> None:
    class Only(nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return torch.softmax(x.permute(1, 0), dim=0)

    _, prog = lower(Only(), (torch.randn(3, 4),))
    assert payloads(prog) == {}


def test_sdk_status_matches_the_import(tmp_path) -> None:
    present = importlib.util.find_spec("eiq_neutron_sdk") is not None
    assert sdk_available() is present
    assert "\n" not in sdk_reason() and ("found at" in sdk_reason()) is present
    if not present:
        with pytest.raises(ModelError, match="eiq-neutron-sdk==3.2.0"):
            export_model(str(SMALL_CNN) + ":factory", delegate="neutron", cache=tmp_path)


def test_parse_neutron_map_from_log() -> None:
    log = ("INFO:root:NeutronBackend::preprocess\n"
           "INFO:root:Neutron to Edge map was created: {0: (10,), 1: (10, 11), 2: (12, 13, 14), 3: ()}\n"
           "INFO:root:Neutron to Edge map was created: {0: (20,), 1: ()}\n")
    assert parse_neutron_map(log) == {0: (10,), 1: (10, 11), 2: (12, 13, 14), 3: ()}
    assert parse_neutron_maps(log)[1] == {0: (20,), 1: ()}
    with pytest.raises(ModelError, match="use_profiling"):
        parse_neutron_map("INFO:root:nothing here\n")
    with pytest.raises(ModelError, match="int"):
        parse_neutron_map("Neutron to Edge map was created: {0: ('a',)}\n")


def test_export_model_plugs_in_the_simulated_delegate(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("HIL_CACHE_DIR", str(tmp_path / "cache"))
    spec = tmp_path / "tiny.py"
    spec.write_text(
        "import torch\nfrom torch import nn\n"
        "def make():\n"
        "    torch.manual_seed(0)\n"
        "    return nn.Sequential(nn.Conv2d(3, 4, 3), nn.ReLU(), nn.Flatten(), nn.Linear(16, 3), nn.Softmax(1)), "
        "(torch.randn(1, 3, 4, 4),)\n")

    compiled = export_model(f"{spec}:make", delegate="neutron-sim", options=options(True, None))
    assert compiled.delegated and "delegate_note" not in compiled.extra
    calls = compiled.extra["neutron_sim"]["delegate_calls"]
    assert [k["function"] for c in calls for k in c["kernels"]] == ["CONV2D", "FULLY_CONNECTED"]
    conv = [t for t in calls[0]["kernels"][0]["op_types"] if not t.startswith("quantized_decomposed")]
    assert conv == ["aten.convolution.default", "aten.relu.default"]
