"""int8 programs (hil.aot.quantize, hil.aot.export, hil.aot.neutron_sim_qdq): a user's self-quantized model exports,
`quantize` with neutron-sim delegates no float operator, and new calibration data re-exports.

Truths the product did not compute: the quantized module's outputs computed here, executorch.runtime's outputs of
the .pte, the operators of ExecuTorch's own deserialized program, and hashlib of the calibration file."""

from __future__ import annotations

import hashlib
import importlib.util
from pathlib import Path

import pytest
import torch

from hil.aot import quantize
from hil.aot.export import export_model

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
QMODEL = FIXTURES / "xnnpack_quantized.py"
SMALL_CNN = FIXTURES / "small_cnn.py"


def _fixture(path: Path):
    spec = importlib.util.spec_from_file_location(f"fixture_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _program_ops(pte: Path) -> tuple[list[str], int]:
    """(operator names the CPU runs, number of delegate calls), read from ExecuTorch's own deserializer."""
    from executorch.exir._serialize._program import deserialize_pte_binary
    from executorch.exir.schema import DelegateCall, KernelCall

    program = deserialize_pte_binary(pte.read_bytes())
    program = getattr(program, "program", program)
    plan = program.execution_plan[0]
    cpu, delegates = [], 0
    for instruction in plan.chains[0].instructions:
        args = instruction.instr_args
        if isinstance(args, KernelCall):
            cpu.append(plan.operators[args.op_index].name)
        elif isinstance(args, DelegateCall):
            delegates += 1
    return cpu, delegates


def _delegate_arg_dtypes(pte: Path) -> set[int]:
    """The scalar types of every tensor a delegate call takes or gives, read from ExecuTorch's deserialized program."""
    from executorch.exir._serialize._program import deserialize_pte_binary
    from executorch.exir.schema import DelegateCall, Tensor

    program = deserialize_pte_binary(pte.read_bytes())
    program = getattr(program, "program", program)
    plan = program.execution_plan[0]
    found = set()
    for instruction in plan.chains[0].instructions:
        if isinstance(instruction.instr_args, DelegateCall):
            for index in instruction.instr_args.args:
                value = plan.values[index].val
                if isinstance(value, Tensor):
                    found.add(int(value.scalar_type))
    return found


def _runtime_outputs(pte: Path, inputs: tuple[torch.Tensor, ...]) -> list[torch.Tensor]:
    from executorch.runtime import Runtime

    data = pte.read_bytes()
    return list(Runtime.get().load_program(data).load_method("forward").execute(list(inputs)))


def test_a_self_quantized_factory_exports_and_its_program_runs_int8(tmp_path: Path) -> None:
    compiled = export_model(f"{QMODEL}:with_float", cache=tmp_path)
    cpu, _ = _program_ops(compiled.pte_path)
    assert "quantized_decomposed::quantize_per_tensor" in cpu and "quantized_decomposed::dequantize_per_tensor" in cpu
    assert compiled.quantization is not None and compiled.quantization.quantizer == "user"
    fixture = _fixture(QMODEL)
    model, inputs = fixture.float_model()
    int8_module = fixture.quantized(model, inputs)
    expected = int8_module(*inputs)  # the int8 module, computed here
    # the output's scale: the argument of the dequantize that makes the converted module's output, read here
    output = next(n for n in int8_module.graph.nodes if n.op == "output")
    last = output.args[0][0] if isinstance(output.args[0], (tuple, list)) else output.args[0]
    assert "dequantize_per_tensor" in str(last.target)
    assert compiled.quantization.output_scales == (pytest.approx(float(last.args[1])),)
    got = _runtime_outputs(compiled.pte_path, inputs)
    assert torch.allclose(got[0], expected, atol=1e-5)
    from hil.aot import references

    stored = references.load(compiled.pte_path.parent, references.inputs_digest(inputs))
    assert stored is not None and torch.allclose(stored.eager[0], expected, atol=1e-6)  # the reference is int8's
    assert stored.float_model is not None and torch.allclose(stored.float_model[0], model(*inputs), atol=1e-6)


def test_a_float_program_has_no_quantization_record(tmp_path: Path) -> None:
    compiled = export_model(f"{SMALL_CNN}:factory", cache=tmp_path)
    assert compiled.quantization is None
    assert not any(op.startswith("quantized_decomposed") for op in _program_ops(compiled.pte_path)[0])


def test_quantize_with_neutron_sim_delegates_no_float_operator(tmp_path: Path) -> None:
    compiled = export_model("cifar10", delegate="neutron-sim", cache=tmp_path, options=quantize.options(True, None))
    cpu, delegates = _program_ops(compiled.pte_path)
    assert delegates >= 1
    # every conv, pool and linear ran inside the delegate; the float softmax and pads stayed on the CPU
    assert not {"aten::convolution", "aten::addmm", "aten::max_pool2d_with_indices"} & set(cpu)
    assert "aten::_softmax" in cpu
    # what the NPU is handed and hands back is int8 (ScalarType CHAR = 1), never a float tensor
    assert _delegate_arg_dtypes(compiled.pte_path) == {1}
    # the softmax after the last dequantize is float: said so, where the CPU fallback is listed
    assert compiled.extra["cpu_reasons"]["_softmax"] == "float operator: Neutron runs int8 only"
    from hil.cli.table import format_table
    from hil.records.profile_model import Profile

    table = format_table(Profile(model="cifar10", cpu_fallback_ops=("aten._softmax.default",),
                                 cpu_fallback_reasons=compiled.extra["cpu_reasons"]))
    assert "CPU fallback ops: _softmax (float operator: Neutron runs int8 only)" in table
    record = compiled.quantization
    assert record is not None and record.stand_in and record.stand_in_for == "NeutronQuantizer"


def test_changed_calibration_data_re_exports(tmp_path: Path) -> None:
    _, inputs = _fixture(SMALL_CNN).factory()
    calibration = tmp_path / "calibration.pt"
    torch.save((torch.cat([inputs[0], inputs[0] * 0.5]),), calibration)
    cache = tmp_path / "cache"
    first = export_model(f"{SMALL_CNN}:factory", cache=cache, options=quantize.options(True, calibration))
    assert first.quantization is not None
    assert first.quantization.calibration_sha256 == hashlib.sha256(calibration.read_bytes()).hexdigest()
    assert first.quantization.calibration_batches == 2
    again = export_model(f"{SMALL_CNN}:factory", cache=cache, options=quantize.options(True, calibration))
    assert again.cached and again.cache_key == first.cache_key
    torch.save((torch.cat([inputs[0] * 3.0, inputs[0]]),), calibration)
    changed = export_model(f"{SMALL_CNN}:factory", cache=cache, options=quantize.options(True, calibration))
    assert not changed.cached and changed.cache_key != first.cache_key
    assert changed.quantization.calibration_sha256 == hashlib.sha256(calibration.read_bytes()).hexdigest()


def test_a_calibration_file_of_the_wrong_shape_is_refused_naming_it(tmp_path: Path) -> None:
    from hil.base.errors import InputError

    calibration = tmp_path / "bad.pt"
    torch.save((torch.zeros(2, 5),), calibration)
    with pytest.raises(InputError, match="calibration file .*bad.pt"):
        export_model(f"{SMALL_CNN}:factory", cache=tmp_path / "c", options=quantize.options(True, calibration))


def test_other_inputs_of_a_quantized_program_are_referenced_by_the_int8_module(tmp_path: Path) -> None:
    """With `--inputs`, the eager reference is made again from the int8 module, not from the float model: it agrees
    with executorch.runtime running the .pte on those inputs, and the float model's outputs are kept apart."""
    from hil.aot.references_run import references_for

    options = quantize.options(True, None)
    compiled = export_model(f"{SMALL_CNN}:factory", cache=tmp_path, options=options)
    _, inputs = _fixture(SMALL_CNN).factory()
    other = (inputs[0].flip(-1) * 0.7,)
    made = references_for(f"{SMALL_CNN}:factory", compiled.pte_path.parent, compiled.pte_path, other, "none",
                          timeout_s=300, log_path=tmp_path / "refs.log", options=options)
    runtime = _runtime_outputs(compiled.pte_path, other)[0]
    assert made.float_model is not None
    int8_gap = float((made.eager[0] - runtime).abs().max())
    float_gap = float((made.float_model[0] - runtime).abs().max())
    assert int8_gap < float_gap  # the reference is the program's own arithmetic, not the float model's
    assert torch.allclose(made.eager[0], runtime, atol=1e-5)


@pytest.mark.parametrize("args, said", [
    (["--model", f"{SMALL_CNN}:factory", "--calibration", "missing.pt"], "given without --quantize"),
    (["--model", f"{SMALL_CNN}:factory", "--quantize", "--calibration", "missing.pt"], "missing.pt cannot be read"),
    (["--model", f"{QMODEL}:factory", "--quantize"], "is an int8 program already"),
])
def test_hil_export_refuses_what_would_be_a_wrong_int8_program_with_exit_2(tmp_path: Path, args: list[str],
                                                                           said: str) -> None:
    import os
    import subprocess
    import sys

    env = {**os.environ, "HIL_CACHE_DIR": str(tmp_path / "cache")}
    done = subprocess.run([sys.executable, "-m", "hil.cli.main", "export", *args, "--out", str(tmp_path / "out")],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and said in lines[0]
