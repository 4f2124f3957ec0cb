"""Typed reads of parsed JSON (or of database rows), each refusal one line naming the file and the field.

A file an earlier run wrote, or a user edited, can hold anything JSON can: a list where an object was,
a string where a number was, NaN, a number too large for a float. Every reader of such a file checks
the fields it uses here first, so the code after it can trust their types, and the user reads
`profile.json: events[3].times_us[0] is "x", not a number` instead of a traceback (hil.base.errors:
FileContentError, exit status 2).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection
from pathlib import Path
from typing import Any, NoReturn

from hil.base.errors import FileContentError

SHOWN_CHARS = 40


def describe(value: Any) -> str:
    """A value as a one-line message shows it: JSON's names for the containers, short scalars as written."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "a list"
    text = repr(value) if isinstance(value, str) else str(value)
    return text if len(text) <= SHOWN_CHARS else text[:SHOWN_CHARS] + "..."


def one_line(text: str, limit: int = 200) -> str:
    """An error text from elsewhere (SQLite, a parser) as a message's tail: one line, at most `limit` characters."""
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[:limit] + "..."


def at(where: str, key: str | int) -> str:
    """The name of a field inside `where`: `events[3]`, `events[3].times_us`."""
    if isinstance(key, int):
        return f"{where}[{key}]"
    return f"{where}.{key}" if where else key


class Fields:
    """The checks of one file (`source`: its path, or a row of a database named in it)."""

    def __init__(self, source: Path | str) -> None:
        self.source = source

    def refuse(self, where: str, what: str) -> NoReturn:
        raise FileContentError(f"{self.source}: {where} {what}" if where else f"{self.source}: {what}")

    def wrong(self, value: Any, where: str, expected: str) -> NoReturn:
        self.refuse(where, f"is {describe(value)}, not {expected}")

    def mapping(self, value: Any, where: str, *, optional: bool = True) -> dict[str, Any]:
        """An object ({} when an optional one is absent)."""
        if value is None and optional:
            return {}
        if not isinstance(value, dict):
            self.wrong(value, where, "an object")
        return value

    def text(self, value: Any, where: str, *, optional: bool = True, choices: Collection[str] | None = None
             ) -> str | None:
        if value is None and optional:
            return None
        if not isinstance(value, str):
            self.wrong(value, where, "a string")
        if choices is not None and value not in choices:
            self.wrong(value, where, "one of " + ", ".join(choices))
        return value

    def flag(self, value: Any, where: str, *, optional: bool = True) -> bool | None:
        if value is None and optional:
            return None
        if not isinstance(value, bool):
            self.wrong(value, where, "true or false")
        return value

    def number(self, value: Any, where: str, *, optional: bool = True, at_least: float | None = None,
               above: float | None = None) -> float | None:
        """A real, finite number (an int or a float, never a bool) within the bounds given."""
        if value is None and optional:
            return None
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            self.wrong(value, where, "a number")
        try:
            number = float(value)
        except OverflowError:  # an int beyond a float's range
            number = math.inf
        if not math.isfinite(number):
            self.refuse("", f"{where} = {describe(value)}; figures must be finite")
        if at_least is not None and number < at_least:
            self.wrong(value, where, f"a number >= {at_least:g}")
        if above is not None and not number > above:
            self.wrong(value, where, f"a number > {above:g}")
        return number

    def whole(self, value: Any, where: str, *, optional: bool = True, at_least: int = 0) -> int | None:
        if value is None and optional:
            return None
        if isinstance(value, bool) or not isinstance(value, int) or value < at_least:
            self.wrong(value, where, f"a whole number >= {at_least}")
        return value

    def items(self, value: Any, where: str, check: Callable[[Any, str], Any], *, optional: bool = True) -> list[Any]:
        """A list, each item passed to `check(item, name)` ([] when an optional one is absent)."""
        if value is None and optional:
            return []
        if not isinstance(value, list):
            self.wrong(value, where, "a list")
        for index, item in enumerate(value):
            check(item, at(where, index))
        return value

    def entries(self, value: Any, where: str, check: Callable[[Any, str], Any], *, optional: bool = True
                ) -> dict[str, Any]:
        """An object, each value passed to `check(value, name)`."""
        found = self.mapping(value, where, optional=optional)
        for key, item in found.items():
            check(item, at(where, key))
        return found

    # Checks of list items and object values, in the `check(value, where)` form `items` and `entries` take.
    def a_text(self, value: Any, where: str) -> None:
        self.text(value, where, optional=False)

    def a_time(self, value: Any, where: str) -> None:
        """A duration in microseconds (or ticks): a finite number, never negative."""
        self.number(value, where, optional=False, at_least=0)

    def a_number_or_null(self, value: Any, where: str) -> None:
        self.number(value, where)
