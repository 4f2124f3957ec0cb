"""The numeric options of the regression side, checked before any work, as board values are.

`--tolerance nan` once made a run with every time doubled "0 regression(s)": every comparison with
NaN is false, so a NaN limit convicts nothing. Each option has one rule here (finite, and within its
range); `hil compare`, `hil baseline update` and the pytest options read the same table, and a value
outside its rule is refused with one line naming the option, the value and the rule.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from hil.base.errors import InputError


@dataclass(frozen=True)
class Rule:
    """A finite number (an integer when `integer`) with `low <= value` (`low < value` when `open_low`)
    and `value <= high`."""

    low: float = 0.0
    high: float = math.inf
    integer: bool = False
    open_low: bool = False

    def describe(self) -> str:
        kind = "an integer" if self.integer else "a finite number"
        low = f"> {self.low:g}" if self.open_low else f">= {self.low:g}"
        return f"{kind} {low}" + (f" and <= {self.high:g}" if math.isfinite(self.high) else "")

    def admits(self, value: Any) -> bool:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return False
        if self.integer and not isinstance(value, int):
            return False
        if not math.isfinite(value) or value > self.high:
            return False
        return value > self.low if self.open_low else value >= self.low


# By the option's short name (the CLI spells it --name, pytest --hil-name).
RULES: dict[str, Rule] = {
    "tolerance": Rule(),
    "noise-k": Rule(),
    "min-delta-us": Rule(),
    "min-share": Rule(high=1.0),
    "alpha": Rule(high=1.0, open_low=True),
    "warmup": Rule(integer=True),
    "limit": Rule(low=1, integer=True),
    "confirm": Rule(integer=True),
    "baseline-runs": Rule(low=1, integer=True),
}


def check_options(values: Mapping[str, Any], prefix: str = "--") -> None:
    """Refuse the first value (by short name) outside its rule: InputError naming `prefix + name`."""
    for name, value in values.items():
        rule = RULES[name]
        if value is not None and not rule.admits(value):
            raise InputError(f"{prefix}{name} {value!r}: must be {rule.describe()}")
