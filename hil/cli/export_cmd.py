"""`hil export`: a model to model.pte + etrecord.bin in a folder, as `hil export` and `hil rt700-image` both need.

Its own module so the two commands share one export (hil/cli/main.py and hil/cli/rt700_image.py
would otherwise import each other).
"""

from __future__ import annotations

from pathlib import Path


def export_program(model: str, out_arg: str, delegate: str, export_timeout: float | None, *,
                   quantize: bool = False, calibration: Path | None = None) -> Path:
    """Export `model` with `delegate` into the folder `out_arg`; print one line saying what happened; the .pte's path."""
    from hil.base import atomic
    from hil.aot.isolated import DEFAULT_EXPORT_TIMEOUT_S, export_isolated  # the default: hil.base.defaults
    from hil.aot import quantize as quantization
    from hil.aot.models import resolve_spec
    from hil.base.checks import finite_number
    from hil.config.inputs import writable_folder
    from hil.run.out_folder import named_folder

    timeout = finite_number(export_timeout if export_timeout is not None else DEFAULT_EXPORT_TIMEOUT_S,
                            "export timeout (seconds)", above=0)
    resolve_spec(model)  # a spec naming no model, then an --out that cannot be: before the export's minutes
    out = writable_folder(named_folder(out_arg))
    options = quantization.options(quantize, calibration)
    compiled = export_isolated(model, delegate=delegate, options=options, timeout_s=timeout)
    atomic.copy_file(compiled.pte_path, out / "model.pte")
    atomic.copy_file(compiled.etrecord_path, out / "etrecord.bin")
    if compiled.extra.get("conversion_log"):
        atomic.write_text(out / "neutron_convert.log", compiled.extra["conversion_log"])
    state = "from cache" if compiled.cached else "exported"
    reason = compiled.reads.not_cached_reason()
    quantized = compiled.quantization
    said = "" if quantized is None else f", int8 ({quantized.quantizer}{' stand-in' if quantized.stand_in else ''})"
    print(f"{compiled.name}: {state}, delegated={compiled.delegated}{said} -> {out_arg}/model.pte, etrecord.bin"
          + (f" ({reason})" if reason else ""))
    return out / "model.pte"
