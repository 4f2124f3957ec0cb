"""The quantization step of an export: which module is lowered, and what quantized it.

Why apart from hil.aot.export: the export's pipeline stays one job (cache, lower, store) and this is another --
deciding whether the model is int8 already (its factory quantized it), quantizing it with the delegate's
quantizer when asked (a LoweringPlan's `quantize` hook, made by `pt2e_hook` for PT2E quantizers), and refusing
what would be a silent wrong result (quantizing twice, a delegate asked to quantize that cannot).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from hil.aot import quantize
from hil.base.errors import InputError, ModelError

if TYPE_CHECKING:
    import torch
    from torch import nn

    from hil.aot.export import LoweringPlan
    from hil.aot.models import ModelSource


def pt2e_hook(plan: "LoweringPlan", options: Mapping[str, Any], quantizer: Callable[[], Any], scheme: str, *,
              stand_in_for: str | None = None) -> Callable[["nn.Module", tuple[Any, ...]], "nn.Module"]:
    """A `LoweringPlan.quantize` hook running hil.aot.quantize's PT2E flow with `quantizer()` on the calibration
    data the options name, and recording it in `plan.quantization`."""

    def hook(module: "nn.Module", example_inputs: tuple[Any, ...]) -> "nn.Module":
        made, calibration = quantizer(), quantize.load_calibration(options, example_inputs)
        converted = quantize.quantize_pt2e(module, example_inputs, made, calibration)
        plan.quantization = quantize.record_for(made, scheme, calibration, stand_in_for=stand_in_for)
        return converted

    return hook


def example_references(source: "ModelSource", module: "nn.Module", record: quantize.QuantizationRecord | None
                       ) -> tuple[tuple["torch.Tensor", ...], tuple["torch.Tensor", ...] | None]:
    """(the eager reference of the example inputs, the float model's outputs or None). The reference is the
    module the program was made from: the int8 one when quantized (what ships); the float model (the user's
    third factory item, or the module the harness quantized) is kept apart, for the quantization error. A
    forward that fails on the example inputs is the model's fault."""
    from hil.aot.references import eager_outputs

    float_model = source.float_module if record is None or record.quantizer == "user" else source.module
    try:
        return (eager_outputs(module, source.example_inputs),
                None if float_model is None else eager_outputs(float_model, source.example_inputs))
    except Exception as exc:
        raise ModelError(f"the eager run of model '{source.name}' ({', '.join(map(str, source.source_files))})"
                         f" on its example inputs failed: {type(exc).__name__}: {exc}") from exc


def quantized_module(source: "ModelSource", plan: "LoweringPlan", delegate: str,
                     options: Mapping[str, Any]) -> tuple["nn.Module", quantize.QuantizationRecord | None]:
    """(the module to export, what quantized it): the plan's quantization when it has one, the model's own when
    its factory returned an int8 program; a model quantized twice, or a quantization asked of a delegate that
    has none, is refused."""
    where = f"model '{source.name}' ({', '.join(map(str, source.source_files))})"
    own = quantize.user_record(source.module)
    if plan.quantize is None:
        if quantize.wants_quantization(options):
            raise ModelError(f"delegate '{delegate}' cannot quantize {where}")
        return source.module, own
    if own is not None:
        raise ModelError(f"{where} is an int8 program already (quantized by its factory); delegate '{delegate}'"
                         " would quantize it again: export it without --quantize (or with a delegate that does not quantize)")
    try:
        module = plan.quantize(source.module, source.example_inputs)
    except (ModelError, InputError):
        raise
    except Exception as exc:
        raise ModelError(f"quantization failed for {where}, delegate '{delegate}': {type(exc).__name__}: {exc}") from exc
    return module, plan.quantization
