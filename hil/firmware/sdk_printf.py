"""Which printf formats the MCUXpresso SDK's PRINTF prints the way C's printf does.

Why: the RT700 firmware prints through the SDK's debug console (components/debug_console_lite,
DbgConsole_Printf), a small printf. Built without PRINTF_ADVANCED_ENABLE (its default) it reads a
conversion as `%`, an optional decimal field width (padded with spaces) and an optional `.digits`
precision that only floats use, then one of d i u x X o b c s p (and f F with
PRINTF_FLOAT_ENABLE). It knows no flags (`0` is read as part of the width, so `%08x` pads with
spaces), no `*`, and no length modifiers; `%p` prints upper-case hex without `0x`. Anything else
after `%` is printed as text and consumes no argument, so every later conversion reads the wrong
one. A host printf prints all of these fine, which is why only the image can tell.
"""

from __future__ import annotations

import re

# C's conversion specification, loosely: every piece is captured so each can be judged.
_SPEC = re.compile(
    r"%(?P<flags>[-+ #0]*)(?P<width>\*|\d+)?(?:\.(?P<precision>\*|\d*))?"
    r"(?P<length>hh|h|ll|l|j|z|t|L|q)?(?P<conversion>.?)",
    re.DOTALL,
)
# What the SDK's PRINTF converts without PRINTF_ADVANCED_ENABLE / PRINTF_FLOAT_ENABLE.
SDK_CONVERSIONS = frozenset("diuxXobcs")
_ADVANCED_LENGTHS = frozenset({"hh", "h", "l", "ll", "z"})  # PRINTF_ADVANCED_ENABLE knows these, no others


def format_problems(text: str) -> list[str]:
    """One entry per conversion of `text` that the SDK's PRINTF would print differently from C."""
    problems = []
    for match in _SPEC.finditer(text):
        reasons = _reasons(match)
        if reasons:
            problems.append(f"{match.group()!s} ({', '.join(reasons)})")
    return problems


def _reasons(match: re.Match[str]) -> list[str]:
    flags, width, precision, length, conversion = match.group("flags", "width", "precision", "length", "conversion")
    if conversion == "%" and match.group() == "%%":
        return []
    reasons = []
    if "0" in flags:
        reasons.append("flag 0 pads with spaces without PRINTF_ADVANCED_ENABLE")
    if flags.replace("0", ""):
        reasons.append(f"flag {flags.replace('0', '')!r} needs PRINTF_ADVANCED_ENABLE")
    if width == "*":
        reasons.append("'*' width needs PRINTF_ADVANCED_ENABLE")
    if precision == "*":
        reasons.append("'.*' precision needs PRINTF_ADVANCED_ENABLE")
    elif precision is not None and conversion not in "fF":
        reasons.append("precision is ignored without PRINTF_ADVANCED_ENABLE")
    if length in _ADVANCED_LENGTHS:
        reasons.append(f"length modifier {length!r} needs PRINTF_ADVANCED_ENABLE")
    elif length:
        reasons.append(f"length modifier {length!r} is not supported")
    if conversion == "p":
        reasons.append("%p prints bare upper-case hex without 0x")
    elif conversion in ("f", "F"):
        reasons.append("floats need PRINTF_FLOAT_ENABLE")
    elif conversion == "":
        reasons.append("a lone '%' ends the string")
    elif conversion not in SDK_CONVERSIONS and conversion != "%":
        reasons.append(f"{conversion!r} is no conversion: printed as text, later arguments shift")
    elif conversion == "%":
        reasons.append("'%%' takes no flags, width or precision")
    return reasons
