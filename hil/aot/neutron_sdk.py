"""The real NXP eIQ Neutron path: lower a model with profiling, as NXP's ``aot_neutron_compile --use_profiling``.

Why it is small and guarded: it needs ``eiq_neutron_sdk`` (``eiq-neutron-sdk==3.2.0``, served only by
NXP's eIQ package index), without which every ``executorch.backends.nxp`` import raises
``RuntimeError: eIQ Neutron SDK not found`` (raised by executorch 1.5.1's nxp backend at import).  Nothing here imports those modules
at module load, so the harness runs without the SDK and says why the real path is off.

``parse_neutron_map`` needs no SDK: it reads the ``Neutron to Edge map was created: {...}`` line the
backend logs, so the map in a conversion log can be checked against the ETRecord.
"""

from __future__ import annotations

import ast
import importlib
import io
import logging
import re
from functools import lru_cache
from typing import Any

from hil.base.errors import ModelError

SDK_MODULE = "eiq_neutron_sdk"
SDK_PIN = "eiq-neutron-sdk==3.2.0"
TARGET = "imxrt700"
_MAP_LINE = re.compile(r"Neutron to Edge map was created:\s*(\{.*\})\s*$", re.MULTILINE)


@lru_cache(maxsize=1)
def _probe() -> tuple[bool, str]:
    """Import the SDK once; its absence is the normal case here, so it is a status, not an error."""
    try:
        sdk = importlib.import_module(SDK_MODULE)
    except Exception as exc:  # ImportError, or the SDK's own failure while loading
        return False, (f"eIQ Neutron SDK unavailable ({type(exc).__name__}: {exc}); install {SDK_PIN} "
                       f"from NXP's eIQ package index to lower with the real Neutron backend")
    version = getattr(sdk, "__version__", "unknown version")
    return True, f"eIQ Neutron SDK {version} found at {getattr(sdk, '__file__', '?')}"


def sdk_reason() -> str:
    """One line saying whether the real Neutron path can run here, and why not."""
    return _probe()[1]


def sdk_available(*, report: bool = False) -> bool:
    """True if ``eiq_neutron_sdk`` imports; with report=True also print the one-line reason."""
    if report:
        print(sdk_reason())
    return _probe()[0]


def parse_neutron_maps(log_text: str) -> list[dict[int, tuple[int, ...]]]:
    """Every ``Neutron to Edge map was created`` map in a log, in order (one per delegated partition)."""
    maps = []
    for match in _MAP_LINE.finditer(log_text):
        try:
            raw = ast.literal_eval(match.group(1))
        except (ValueError, SyntaxError) as exc:
            raise ModelError(f"unreadable Neutron to Edge map {match.group(1)[:80]!r}: {exc}") from None
        if not isinstance(raw, dict) or not all(
            isinstance(k, int) and isinstance(v, tuple) and all(isinstance(h, int) for h in v) for k, v in raw.items()
        ):
            raise ModelError(f"Neutron to Edge map is not {{int: (int, ...)}}: {match.group(1)[:80]!r}")
        maps.append(raw)
    return maps


def parse_neutron_map(log_text: str) -> dict[int, tuple[int, ...]]:
    """The first map in the log (kernel index -> edge debug handles; the last, empty entry is the dump)."""
    maps = parse_neutron_maps(log_text)
    if not maps:
        raise ModelError("no 'Neutron to Edge map was created: {...}' line in the conversion log "
                         "(was the model converted with use_profiling=True?)")
    return maps[0]


class _LogCapture:
    """Collects the converter's log records (the Neutron to Edge map among them) during one lowering."""

    def __init__(self) -> None:
        self.buffer = io.StringIO()
        self._handler = logging.StreamHandler(self.buffer)
        self._old_level = logging.getLogger().level

    def start(self) -> None:
        root = logging.getLogger()
        root.addHandler(self._handler)
        root.setLevel(logging.INFO)

    def stop(self) -> str:
        root = logging.getLogger()
        root.removeHandler(self._handler)
        root.setLevel(self._old_level)
        return self.buffer.getvalue()


def neutron_lowering_plan(source: Any, options: Any) -> Any:
    """The real Neutron lowering as an export plan (NXP's profiling guide, step by step).

    ``NeutronQuantizer`` calibration on the example inputs (the `quantize` hook), then
    ``NeutronPartitioner(generate_neutron_compile_spec("imxrt700", use_profiling=True))`` with
    ``NeutronEdgePassManager`` inside ``to_edge_transform_and_lower(..., generate_etrecord=True)``.
    The partitioner needs the quantized state dict, so the hook fills the plan's partitioner list.
    The converter log and its parsed map come back in `extra`.
    """
    if not sdk_available():
        raise ModelError(sdk_reason())
    import torch
    from executorch.backends.nxp.backend.neutron_target_spec import NeutronTargetSpec
    from executorch.backends.nxp.edge_passes.neutron_edge_pass_manager import NeutronEdgePassManager
    from executorch.backends.nxp.neutron_partitioner import NeutronPartitioner
    from executorch.backends.nxp.nxp_backend import core_aten_ops_exception_list, generate_neutron_compile_spec
    from executorch.backends.nxp.quantizer.neutron_quantizer import NeutronQuantizer
    from executorch.backends.nxp.quantizer.utils import calibrate_and_quantize
    from executorch.exir import EdgeCompileConfig

    from hil.aot import quantize as quantization
    from hil.aot.export import LoweringPlan

    target_spec = NeutronTargetSpec(target=TARGET)
    log = _LogCapture()
    partitioners: list[Any] = []

    def quantize(module: Any, example_inputs: tuple) -> Any:
        log.start()
        quantizer, calibration = NeutronQuantizer(target_spec), quantization.load_calibration(options, example_inputs)
        exported = torch.export.export(module.eval(), example_inputs, strict=True)
        quantized = calibrate_and_quantize(exported.module(), list(calibration.batches), quantizer)
        plan.quantization = quantization.record_for(quantizer, quantization.NEUTRON_SCHEME, calibration)
        spec = generate_neutron_compile_spec(TARGET, use_profiling=True)
        partitioners.append(
            NeutronPartitioner(spec, target_spec, post_quantization_state_dict=quantized.state_dict())
        )
        return quantized

    def after_lowering(_edge: Any, _program: Any) -> dict[str, Any]:
        text = log.stop()
        maps = parse_neutron_maps(text)
        return {
            "conversion_log": text,
            "neutron_maps": [{str(k): list(v) for k, v in m.items()} for m in maps],
        }

    plan = LoweringPlan(
        quantize=quantize,
        partitioners=partitioners,
        transform_passes=NeutronEdgePassManager(),
        compile_config=EdgeCompileConfig(_core_aten_ops_exception_list=core_aten_ops_exception_list),
        after_lowering=after_lowering,
        extra={"sdk": sdk_reason()},
    )
    return plan


def _register() -> None:
    from hil.aot.export import register_lowering

    register_lowering("neutron", neutron_lowering_plan)


_register()
