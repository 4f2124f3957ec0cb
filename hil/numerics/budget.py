"""The numerics limits of a budget (`snr_db_min`, `max_abs_error`) against a profile's `numerics` section.

Judged on the worst output against eager PyTorch (`vs_eager`): the model is the truth a user states
limits for. A run that computed no outputs breaks any numerics limit, saying why: a limit that cannot
be checked must not pass.
"""

from __future__ import annotations

from typing import Any

from hil.records.numerics_section import COMPUTED


def numerics_violations(section: dict[str, Any] | None, snr_db_min: float | None,
                        max_abs_error: float | None) -> list[tuple[str, float | None, float, str, str]]:
    """(what, measured, limit, unit, detail) for every limit broken; empty when none is set or all are met."""
    from hil.numerics.int8 import int8_violation

    int8 = int8_violation(section)  # an int8 program beyond its LSB bound breaks every budget, limits or not
    found_int8 = [] if int8 is None else [int8]
    wanted = [(name, limit) for name, limit in (("snr_db_min", snr_db_min), ("max_abs_error", max_abs_error))
              if limit is not None]
    if not wanted:
        return found_int8
    if not section or section.get("status") != COMPUTED:
        why = f"outputs not computed ({section.get('reason')})" if section else "the profile has no numerics section"
        return [(_WHAT[name], None, limit, _UNIT[name], why) for name, limit in wanted]
    fig = section.get("vs_eager") or {}
    found = list(found_int8)
    if snr_db_min is not None:
        snr = fig.get("snr_db")
        exact = fig.get("bit_exact", False)
        if not exact and (snr is None or snr < snr_db_min):
            detail = "a NaN or infinity in an output" if snr is None else f"worst output, cosine {fig.get('cosine'):.6g}"
            found.append((_WHAT["snr_db_min"], snr, snr_db_min, "dB", detail))
    if max_abs_error is not None:
        err = fig.get("max_abs_error")
        if err is None or err > max_abs_error:
            found.append((_WHAT["max_abs_error"], err, max_abs_error, "", "worst output"))
    return found


_WHAT = {"snr_db_min": "output SNR vs eager PyTorch (min)", "max_abs_error": "output max abs error vs eager PyTorch"}
_UNIT = {"snr_db_min": "dB", "max_abs_error": ""}
