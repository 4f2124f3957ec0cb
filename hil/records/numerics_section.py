"""What a profile's `numerics` section says, read back: whether outputs were computed, and its one line.

Below the check itself (hil.numerics.check, which runs models): the table, the budgets and the gate
read a section any run wrote without importing the frameworks that made it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

COMPUTED, NOT_COMPUTED = "computed", "not computed"


def numerics_line(section: Mapping[str, Any] | None) -> str | None:
    """The table's one line: the worst figures against each reference, or why there are none."""
    if not section:
        return None
    if section.get("status") != COMPUTED:
        return f"numerics: outputs not computed ({section.get('reason')})"
    broken = section.get("non_finite_outputs")
    if broken:  # hil.numerics.check: no figures, NaN against NaN would read as top-1 100%
        counts = ", ".join(f"output {e.get('index')}: {e.get('nan')} NaN, {e.get('inf')} infinite" for e in broken)
        return f"numerics: outputs not finite ({counts})"
    parts = [f"{label} {_figures(section.get(key) or {})}" for key, label in
             (("vs_eager", "vs eager"), ("vs_host_runtime", "vs host runtime"))]
    return "numerics: " + "; ".join(parts)


def _figures(fig: Mapping[str, Any]) -> str:
    if "skipped" in fig:
        return f"skipped ({fig['skipped']})"
    if fig.get("bit_exact"):
        text = "bit-exact"
    else:
        snr = "n/a" if fig.get("snr_db") is None else f"{fig['snr_db']:.1f} dB"
        abs_err = "n/a" if fig.get("max_abs_error") is None else f"{fig['max_abs_error']:.3g}"
        cos = "n/a" if fig.get("cosine") is None else f"{fig['cosine']:.6f}"
        text = f"SNR {snr}, max abs {abs_err}, cos {cos}"
    if "top1_agreement" in fig:
        text += f", top-1 {fig['top1_agreement'] * 100:.0f}%"
    return text
