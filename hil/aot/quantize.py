"""Static int8 quantization for an export: the PT2E flow, its calibration data, and the record of what was done.

Why one module: every delegate that quantizes (the simulated Neutron's stand-in, NXP's NeutronQuantizer, the
Cortex-M lowering's CortexMQuantizer, the portable CPU kernels) runs the same steps -- capture the module with
torch.export, `prepare_pt2e` with the delegate's quantizer, run the calibration batches through it,
`convert_pt2e` -- and must say the same things about it in the cache key, manifest.json and profile.json:
which quantizer (and whether it is a stand-in for the real one), which scheme, which calibration data (its
sha256). A figure measured on an int8 program must never be mistaken for one of the float model, nor for one
calibrated on other data.

Calibration data: the example inputs, or a file (`--calibration FILE`) in the `--inputs` formats (a .pt
tensor or tuple/list of tensors, a .npz in order; hil.records.tensors): one tensor per model input, holding
the calibration samples stacked along the first dimension. Each is cut into batches of the example input's
first dimension, so a model exported with a 1x3x32x32 example takes an Nx3x32x32 tensor as N batches.
The file's sha256 is computed without torch (the cache key is decided before any model code runs).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hil.base.errors import InputError, ModelError

if TYPE_CHECKING:
    import torch
    from torch import nn

# The option names a lowering reads (export_model's `options`, hence part of the cache key).
QUANTIZE = "quantize"
CALIBRATION = "calibration"  # the calibration file's path (absent: the example inputs)
CALIBRATION_SHA256 = "calibration_sha256"  # that file's sha256, so new data under the same name re-exports

# NXP's flow (NeutronQuantizer) and the stand-in that copies it: int8, weights symmetric per tensor,
# activations asymmetric per tensor.
NEUTRON_SCHEME = "int8; weights symmetric per-tensor; activations asymmetric per-tensor"
EXAMPLE_INPUTS = "example inputs"
_QUANTIZED_NAMESPACES = ("quantized_decomposed", "cortex_m")


@dataclass(frozen=True)
class QuantizationRecord:
    """What made an int8 program: shown in manifest.json / profile.json (`quantization`, null for float).

    quantizer:           the quantizer's class name ("user" when the model came quantized from its factory)
    scheme:              the int8 scheme in words
    calibration:         "example inputs", a file path, or "by the user" for a user-quantized model
    calibration_sha256:  sha256 of the calibration data (file bytes; the example inputs' digest); None if unknown
    stand_in:            True when the quantizer only copies the real one's scheme (neutron-sim)
    stand_in_for:        the real quantizer it stands in for, when stand_in
    """

    quantizer: str
    scheme: str
    calibration: str
    calibration_sha256: str | None
    calibration_batches: int
    stand_in: bool = False
    stand_in_for: str | None = None
    # Each program output's quantization scale (its last dequantize's), None for a float output: what the numerics
    # check divides errors by to count them in LSB (hil.numerics.int8).
    output_scales: tuple[float | None, ...] = ()

    def to_json(self) -> dict[str, Any]:
        made = asdict(self)
        made["output_scales"] = list(self.output_scales)
        return made

    @classmethod
    def from_json(cls, data: object) -> "QuantizationRecord | None":
        """The record `data` holds; None for a float program (null) or anything that is not a record."""
        if not isinstance(data, dict):
            return None
        try:
            made = cls(**data)
        except TypeError:
            return None
        return replace(made, output_scales=tuple(made.output_scales or ()))


@dataclass(frozen=True)
class Calibration:
    """Calibration batches (each a tuple of the model's inputs) and where they came from."""

    batches: tuple[tuple["torch.Tensor", ...], ...]
    source: str
    sha256: str


def file_sha256(path: Path) -> str:
    """sha256 of a calibration file's bytes; InputError (exit 2) naming it when it cannot be read."""
    digest = hashlib.sha256()
    try:
        with Path(path).open("rb") as handle:
            for chunk in iter(lambda: handle.read(1 << 20), b""):
                digest.update(chunk)
    except OSError as exc:
        raise InputError(f"calibration file {path} cannot be read: {exc.strerror or exc}") from exc
    return digest.hexdigest()


def options(quantize: bool, calibration: Path | None) -> dict[str, Any]:
    """The export options that ask for quantization (empty for a float export): a calibration file is named by
    its absolute path and its sha256, so the cache key changes with its content."""
    if not quantize:
        if calibration is not None:
            raise InputError(f"calibration file {calibration} given without --quantize: nothing would use it")
        return {}
    made: dict[str, Any] = {QUANTIZE: True}
    if calibration is not None:
        path = Path(calibration).expanduser().resolve()
        made[CALIBRATION] = str(path)
        made[CALIBRATION_SHA256] = file_sha256(path)
    return made


def add_arguments(parser: Any) -> None:
    """`--quantize` and `--calibration FILE` (`--hil-*` spellings too) for `hil run`, `hil export`, `hil rt700-image`."""
    parser.add_argument("--quantize", "--hil-quantize", dest="quantize", action="store_true",
                        help="quantize to int8 (PT2E static) with the delegate's quantizer before lowering")
    parser.add_argument("--calibration", "--hil-calibration", dest="calibration", type=Path, default=None,
                        metavar="FILE", help="with --quantize: calibration samples (.pt/.npz, stacked on the first "
                                             "dimension) instead of the example inputs")


def wants_quantization(opts: Mapping[str, Any] | None) -> bool:
    return bool((opts or {}).get(QUANTIZE))


def load_calibration(opts: Mapping[str, Any] | None, example_inputs: Sequence["torch.Tensor"]) -> Calibration:
    """The calibration batches the options name: the file's (checked against the example inputs' count, shapes
    and dtypes, and against the sha256 the cache key was made with), else the example inputs as one batch."""
    from hil.aot.references import inputs_digest

    opts = opts or {}
    if not opts.get(CALIBRATION):
        return Calibration((tuple(example_inputs),), EXAMPLE_INPUTS, inputs_digest(example_inputs))
    path = Path(opts[CALIBRATION])
    sha = file_sha256(path)
    if opts.get(CALIBRATION_SHA256) not in (None, sha):
        raise InputError(f"calibration file {path} changed while the export ran; run again")
    return Calibration(_batches(path, example_inputs), str(path), sha)


def _batches(path: Path, example_inputs: Sequence["torch.Tensor"]) -> tuple[tuple["torch.Tensor", ...], ...]:
    from hil.records.tensors import load_inputs_file

    _, tensors = load_inputs_file(path)
    if len(tensors) != len(example_inputs):
        raise InputError(f"calibration file {path} holds {len(tensors)} tensor(s); the model takes {len(example_inputs)}")
    counts = set()
    for index, (given, example) in enumerate(zip(tensors, example_inputs)):
        step = example.shape[0] if example.dim() else 1
        if given.dtype != example.dtype or given.dim() != example.dim() or given.shape[1:] != example.shape[1:] \
                or given.shape[0] % step or not given.shape[0]:
            raise InputError(f"calibration file {path}: input {index} is {given.dtype} {list(given.shape)}; expected"
                             f" {example.dtype} [N*{step}, {', '.join(map(str, example.shape[1:]))}]")
        counts.add(given.shape[0] // step)
    if len(counts) != 1:
        raise InputError(f"calibration file {path}: its tensors hold different numbers of samples {sorted(counts)}")
    chunks = [given.split(example.shape[0]) for given, example in zip(tensors, example_inputs)]
    return tuple(tuple(c.contiguous() for c in batch) for batch in zip(*chunks))


def quantize_pt2e(module: "nn.Module", example_inputs: Sequence["torch.Tensor"], quantizer: Any,
                  calibration: Calibration) -> "torch.fx.GraphModule":
    """`convert_pt2e(prepare_pt2e(captured module, quantizer))` after running every calibration batch.

    The capture drops torch.export's guard call (`check_guards=False`): the lowering passes after it refuse a
    `call_module` node, and the calibration batches have the example inputs' shapes by construction.
    """
    import torch
    from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e

    captured = torch.export.export(module, tuple(example_inputs)).module(check_guards=False)
    prepared = prepare_pt2e(captured, quantizer)
    with torch.no_grad():
        for batch in calibration.batches:
            prepared(*batch)
    return convert_pt2e(prepared)


def neutron_scheme_quantizer() -> Any:
    """A quantizer with Neutron's scheme, for the simulated NPU (NeutronQuantizer needs NXP's SDK).

    ExecuTorch's XNNPACKQuantizer with `get_symmetric_quantization_config(is_per_channel=False)` gives int8
    per-tensor affine activations and per-tensor symmetric weights (executorch/backends/xnnpack/quantizer/
    xnnpack_quantizer.py, get_symmetric_quantization_config): NeutronQuantizer's scheme.
    """
    from executorch.backends.xnnpack.quantizer.xnnpack_quantizer import (
        XNNPACKQuantizer,
        get_symmetric_quantization_config,
    )

    return XNNPACKQuantizer().set_global(get_symmetric_quantization_config(is_per_channel=False))


def quantized_ops(module: "nn.Module") -> list[str]:
    """The quantize/dequantize (and Cortex-M quantized) operators of an exported/converted graph, in order."""
    import torch

    if not isinstance(module, torch.fx.GraphModule):
        return []
    return [str(node.target) for node in module.graph.nodes
            if node.op == "call_function" and str(node.target).split(".")[0] in _QUANTIZED_NAMESPACES]


def output_scales(graph: Any) -> tuple[float | None, ...]:
    """Each output's quantization scale in a lowered graph: the `scale` argument of the dequantize (per tensor, of
    quantized_decomposed or cortex_m) that makes it; None for an output made otherwise (a float operator)."""
    output = next((node for node in graph.nodes if node.op == "output"), None)
    if output is None:
        return ()
    values = output.args[0] if isinstance(output.args[0], (tuple, list)) else (output.args[0],)
    scales: list[float | None] = []
    for value in values:
        name = getattr(getattr(value, "target", None), "__name__", str(getattr(value, "target", "")))
        parts = name.split(".")
        per_tensor = len(parts) >= 2 and parts[0] in _QUANTIZED_NAMESPACES and parts[1] == "dequantize_per_tensor"
        scale = value.args[1] if per_tensor and len(value.args) > 1 else None
        scales.append(float(scale) if isinstance(scale, (int, float)) else None)
    return tuple(scales)


def load_out_variants() -> None:
    """Register the quantize/dequantize operators' out variants (ExecuTorch's quantized kernels' AOT library,
    executorch/kernels/quantized/__init__.py loads libquantized_ops_aot_lib): without them `to_executorch` of
    an int8 program fails with "Missing out variants: {'quantized_decomposed::quantize_per_tensor', ...}"."""
    import executorch.kernels.quantized  # noqa: F401  (loads the library as it is imported)


def user_record(module: "nn.Module") -> QuantizationRecord | None:
    """The record of a model that came quantized from its factory (None for a float model): the quantizer is the
    user's, its scheme read from the graph's quantize operators."""
    ops = quantized_ops(module)
    if not ops:
        return None
    kinds = sorted({op.split(".")[1] for op in ops if op.startswith("quantized_decomposed.quantize")})
    scheme = "int8 (the model's own: " + (", ".join(kinds) or "quantized operators") + ")"
    return QuantizationRecord("user", scheme, "by the user", None, 0)


def record_for(quantizer: Any, scheme: str, calibration: Calibration, *,
               stand_in_for: str | None = None) -> QuantizationRecord:
    return QuantizationRecord(type(quantizer).__name__, scheme, calibration.source, calibration.sha256,
                              len(calibration.batches), stand_in=stand_in_for is not None, stand_in_for=stand_in_for)


def refuse_requantize(record: QuantizationRecord | None, where: str) -> None:
    """A model that is quantized already cannot be quantized again: said rather than done twice."""
    if record is not None:
        raise ModelError(f"{where} is quantized already (its factory returned an int8 program): drop --quantize")
