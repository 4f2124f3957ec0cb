"""What a profile's `numerics` section must hold before `hil compare`, `hil baseline update`, the table,
the budgets or the SNR gate read it.

The section is written by hil.numerics.check alone, but a profile.json or a baseline comes back from
disk: a `numerics` that was a list or a string crashed `hil compare` (AttributeError, exit 1, which
reads as "regression"), and `hil baseline update` stored it, so every later compare crashed too. Each
field those readers use (hil.records.numerics_section, .gate, .budget) is checked here, the same check in
every command (hil.records.validate.profile calls it).
"""

from __future__ import annotations

from typing import Any

from hil.records.numerics_section import COMPUTED, NOT_COMPUTED
from hil.records.validate.fields import Fields, at

REFERENCES = ("vs_eager", "vs_host_runtime")
# Figures of one output against one reference (hil.numerics.metrics.compare), and their bounds.
ERRORS = ("max_abs_error", "max_rel_error")


def check_numerics(fields: Fields, value: Any, where: str) -> dict[str, Any]:
    """The section ({} when absent); FileContentError naming the first field of the wrong type."""
    section = fields.mapping(value, where)
    if not section:
        return section
    fields.text(section.get("status"), at(where, "status"), optional=False, choices=(COMPUTED, NOT_COMPUTED))
    fields.text(section.get("reason"), at(where, "reason"))
    fields.mapping(section.get("inputs"), at(where, "inputs"))
    for key in REFERENCES:
        check_figures(fields, section.get(key), at(where, key))
    fields.items(section.get("outputs"), at(where, "outputs"), lambda o, name: _output(fields, o, name))
    fields.items(section.get("non_finite_outputs"), at(where, "non_finite_outputs"),
                 lambda o, name: _output(fields, o, name))
    return section


def check_figures(fields: Fields, value: Any, where: str) -> dict[str, Any]:
    """One output's (or the worst output's) figures against a reference, or why they were skipped."""
    figures = fields.mapping(value, where)
    fields.text(figures.get("skipped"), at(where, "skipped"))
    for key in ERRORS:
        fields.number(figures.get(key), at(where, key), at_least=0)
    fields.number(figures.get("snr_db"), at(where, "snr_db"))
    fields.number(figures.get("cosine"), at(where, "cosine"))
    top1 = fields.number(figures.get("top1_agreement"), at(where, "top1_agreement"), at_least=0)
    if top1 is not None and top1 > 1:
        fields.wrong(top1, at(where, "top1_agreement"), "a share between 0 and 1")
    for key in ("bit_exact", "non_finite"):
        fields.flag(figures.get(key), at(where, key))
    return figures


def _output(fields: Fields, value: Any, where: str) -> None:
    output = fields.mapping(value, where, optional=False)
    for key in ("index", "nan", "inf"):
        fields.whole(output.get(key), at(where, key))
    fields.text(output.get("dtype"), at(where, "dtype"))
    fields.items(output.get("shape"), at(where, "shape"), lambda n, name: fields.whole(n, name, optional=False))
    for key in REFERENCES:
        check_figures(fields, output.get(key), at(where, key))
