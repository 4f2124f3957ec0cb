"""What a profile's `stack` and `code_size` sections must hold before the table or the budgets read them.

`stack_bytes_max` (hil.regress.budgets) reads `stack.used_bytes` and the table's footer prints it with
`code_size.total_bytes`: a section from disk whose figure is a string or negative must be refused here,
naming the field, rather than crash or pass a budget (the same check in every command).
"""

from __future__ import annotations

from typing import Any

from hil.records.validate.fields import Fields, at

STACK_BYTES = ("used_bytes", "size_bytes", "free_bytes")
CODE_BYTES = ("total_bytes", "functions_bytes", "kernels_bytes", "runtime_bytes")


def check_stack(fields: Fields, value: Any, where: str) -> dict[str, Any]:
    """The `stack` section ({} when absent): whole byte counts or null, `overflowed` a flag."""
    section = fields.mapping(value, where)
    for key in STACK_BYTES:
        fields.whole(section.get(key), at(where, key))
    fields.flag(section.get("overflowed"), at(where, "overflowed"))
    for key in ("limit", "top", "note", "method"):
        fields.text(section.get(key), at(where, key))
    return section


def check_code_size(fields: Fields, value: Any, where: str) -> dict[str, Any]:
    """The `code_size` section ({} when absent): whole byte counts, per kernel and per operator."""
    section = fields.mapping(value, where)
    for key in CODE_BYTES:
        fields.whole(section.get(key), at(where, key))
    fields.entries(section.get("kernels"), at(where, "kernels"),
                   lambda n, name: fields.whole(n, name, optional=False))
    fields.entries(section.get("operators"), at(where, "operators"), lambda o, name: _operator(fields, o, name))
    return section


def _operator(fields: Fields, value: Any, where: str) -> None:
    operator = fields.mapping(value, where, optional=False)
    fields.whole(operator.get("bytes"), at(where, "bytes"))
    for key in ("kernel", "note"):
        fields.text(operator.get(key), at(where, key))
    fields.items(operator.get("op_types"), at(where, "op_types"), fields.a_text)
