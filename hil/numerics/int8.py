"""The numerics of an int8 program in its own unit: errors in quantization steps (LSB) of each output.

Why: a float error such as 0.031 says nothing by itself about an int8 program; divided by the output's
quantization scale (the step between two int8 codes, read from the program's last dequantize: hil.aot.quantize
`output_params`) it says how many codes the target is off. Against the quantized eager module (what ships,
computed on the host with float arithmetic between quantize/dequantize nodes) an int8 kernel may round each
requantization once more; anything beyond BOUND_LSB is a wrong kernel or a wrong program, and fails the check.

Rules: max_abs_error_lsb = max |a - r| / scale over an output's elements (float64); the worst output is the
largest; top1_agreement as hil.numerics.metrics. Outputs without a scale (a float output of an int8 program) are
left out and named.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from hil.numerics.metrics import top1_agreement

if TYPE_CHECKING:
    import torch

# Quantization steps a target output may be off from the quantized eager module: one for the reference's own
# rounding at the output's quantize (float arithmetic in another order), one for an integer kernel's
# requantization rounding (CMSIS-NN's fixed-point multiplier against the float scale).
BOUND_LSB = 2.0
# Outputs are float32 multiples of the scale: an error of exactly N steps reads N(1 +- 1e-7) in float64.
_FLOAT32_SLACK = 1e-6


def lsb_error(actual: "torch.Tensor", reference: "torch.Tensor", scale: float) -> float:
    """max |actual - reference| in quantization steps of `scale` (> 0)."""
    if not scale > 0:
        raise ValueError(f"a quantization scale must be positive, not {scale}")
    diff = (actual.detach().double() - reference.detach().double()).abs()
    return float(diff.max()) / scale if diff.numel() else 0.0


def int8_figures(target: Sequence["torch.Tensor"], references: Mapping[str, Sequence["torch.Tensor"] | str],
                 scales: Sequence[float | None], bound_lsb: float = BOUND_LSB) -> dict[str, Any]:
    """The `int8` part of the numerics section: per reference, the worst output's error in LSB and the top-1
    agreement; `within_bound` judges the quantized eager module's (the reference an int8 program is held to)."""
    section: dict[str, Any] = {"output_scales": list(scales), "bound_lsb": bound_lsb}
    scaled = [i for i, scale in enumerate(scales) if scale is not None and i < len(target)]
    unscaled = [i for i in range(len(target)) if i not in scaled]
    if unscaled:
        section["outputs_without_scale"] = unscaled
    for name, ref in references.items():
        if isinstance(ref, str) or len(ref) != len(target):
            continue
        if any(tuple(target[i].shape) != tuple(ref[i].shape) for i in scaled):
            continue
        errors = [lsb_error(target[i], ref[i], float(scales[i])) for i in scaled]  # type: ignore[arg-type]
        figures: dict[str, Any] = {"max_abs_error_lsb": max(errors) if errors else None}
        top1 = [t for t in (top1_agreement(target[i], ref[i]) for i in scaled) if t is not None]
        if top1:
            figures["top1_agreement"] = min(top1)
        section[f"vs_{name}"] = figures
    worst = (section.get("vs_eager") or {}).get("max_abs_error_lsb")
    section["within_bound"] = None if worst is None else worst <= bound_lsb * (1 + _FLOAT32_SLACK)
    return section


def int8_violation(section: Mapping[str, Any] | None) -> tuple[str, float | None, float, str, str] | None:
    """(what, measured, bound, unit, detail) when an int8 program's outputs are further from the quantized eager
    module than the bound allows; None otherwise (a float program, or within the bound)."""
    int8 = (section or {}).get("int8")
    if not isinstance(int8, Mapping) or int8.get("within_bound") is not False:
        return None
    measured = (int8.get("vs_eager") or {}).get("max_abs_error_lsb")
    return ("int8 output error vs the quantized eager module", measured, float(int8["bound_lsb"]), "LSB",
            "worst output, in quantization steps of its scale")
