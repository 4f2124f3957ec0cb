"""What a valid number is, once: for the board-file schema (hil.config.board_schema) and the run's inputs (hil.config.inputs).

A clock, a timeout or a jitter must be a real, finite number: bools are ints to Python and TOML and
JSON can spell inf and nan, so neither passes as a number here.
"""

from __future__ import annotations

import math
from typing import Any

from hil.base.errors import InputError


def is_int(value: Any) -> bool:
    """An int that is not a bool."""
    return isinstance(value, int) and not isinstance(value, bool)


def is_number(value: Any) -> bool:
    """A real, finite number (int or float, not a bool)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def within(number: float, *, above: float | None = None, at_least: float | None = None, below: float | None = None) -> bool:
    """Inside the bounds given: `above` and `below` exclusive, `at_least` inclusive."""
    return ((above is None or number > above) and (at_least is None or number >= at_least)
            and (below is None or number < below))


def finite_number(value: Any, what: str, *, above: float | None = None, at_least: float | None = None,
                  below: float | None = None) -> float:
    """`value` as a float when it is a real, finite number within the bounds given; else InputError."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InputError(f"{what} must be a number, not {value!r}")
    number = float(value)
    if not math.isfinite(number):
        raise InputError(f"{what} must be a finite number, not {value!r}")
    if above is not None and not number > above:
        raise InputError(f"{what} must be greater than {above:g}, not {value!r}")
    if at_least is not None and not number >= at_least:
        raise InputError(f"{what} must be at least {at_least:g}, not {value!r}")
    if below is not None and not number < below:
        raise InputError(f"{what} must be less than {below:g}, not {value!r}")
    return number


def whole_number(value: Any, what: str, *, at_least: int) -> int:
    """`value` when it is an int (not a bool) >= `at_least`; else InputError."""
    if not is_int(value) or value < at_least:
        raise InputError(f"{what} must be a whole number >= {at_least}, not {value!r}")
    return value
