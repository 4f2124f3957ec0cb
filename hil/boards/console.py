"""The target's serial console as a test reads it: `hil_board.console` (hil.run.board_session).

The calls are the ones pytest-embedded's `dut` offers, so a test reads the same either way:

    console.expect(r"Inference time: (\\d+) us")          # a regex; returns the re.Match
    console.expect([r"PASS", r"FAIL: (.*)"])              # the first to appear; match.re.pattern says which
    console.expect_exact("Program complete")              # plain text (or a list of texts)
    console.expect(r"done", not_matching=[r"HardFault"])  # fail at once if a fault line comes first

Each call looks only past the previous match, so successive calls move forward through the output,
which was read from before the target ran (nothing is lost). `timeout` defaults to the board file's
`[serial].expect_timeout_s` (DEFAULT_EXPECT_TIMEOUT_S without one). Every failure (a timeout, the port
closing, an unwanted line) names the patterns, the log file and shows the console's last lines.
"""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from dataclasses import dataclass

from hil.base.errors import TargetError, TimeoutExpired
from hil.target.serial_reader import SerialReader

DEFAULT_EXPECT_TIMEOUT_S = 30.0
Patterns = str | re.Pattern[str] | Sequence[str | re.Pattern[str]]


class UnexpectedOutput(TargetError):
    """A `not_matching` pattern appeared before the expected one."""


@dataclass(frozen=True)
class _Wanted:
    """One pattern as compiled, and as the user wrote it: an error shows `shown`, never the escaped regex
    that `expect_exact` searches with (`'THIS NEVER APPEARS'`, not `'THIS\\\\ NEVER\\\\ APPEARS'`)."""

    regex: re.Pattern[str]
    shown: str


def _compile(patterns: Patterns, *, exact: bool = False) -> list[_Wanted]:
    items = [patterns] if isinstance(patterns, (str, re.Pattern)) else list(patterns)
    if not items:
        raise ValueError("expect() needs at least one pattern")
    out = []
    for item in items:
        if isinstance(item, re.Pattern):
            out.append(_Wanted(item, item.pattern))
        else:
            out.append(_Wanted(re.compile(re.escape(item) if exact else item), item))
    return out


def _first(wanted: list[_Wanted], text: str, start: int) -> tuple[re.Match[str], _Wanted] | None:
    """The match that starts earliest in `text[start:]`, with its pattern; on a tie, the pattern listed first."""
    found = [(m, w) for m, w in ((w.regex.search(text, start), w) for w in wanted) if m is not None]
    return min(found, key=lambda pair: pair[0].start()) if found else None


class Console:
    """The target's serial console, with its own place in the output (apart from the harness's own checks)."""

    POLL_S = 0.05

    def __init__(self, reader: SerialReader, default_timeout: float = DEFAULT_EXPECT_TIMEOUT_S) -> None:
        self._reader = reader
        self._cursor = 0
        self.default_timeout = float(default_timeout)

    def expect(self, pattern: Patterns, timeout: float | None = None, *,
               not_matching: Patterns = ()) -> re.Match[str]:
        """Wait for `pattern` (a regex, or a list of them: the first to appear wins) past the previous match."""
        return self._wait(_compile(pattern), timeout, _compile(not_matching) if not_matching else [])

    def expect_exact(self, text: str | Sequence[str], timeout: float | None = None, *,
                     not_matching: str | Sequence[str] = ()) -> re.Match[str]:
        """`expect` for plain text (or a list of texts): no character is special; `match.group(0)` is the text."""
        return self._wait(_compile(text, exact=True), timeout,
                          _compile(not_matching, exact=True) if not_matching else [])

    @property
    def text(self) -> str:
        """Everything the console printed so far."""
        return self._reader.text

    def _wait(self, wanted: list[_Wanted], timeout: float | None, unwanted: list[_Wanted]) -> re.Match[str]:
        limit = self.default_timeout if timeout is None else float(timeout)
        deadline = time.monotonic() + limit
        while True:
            ended = self._reader.ended  # read before the text: nothing arrives after the end
            text = self._reader.text
            found = _first(wanted, text, self._cursor)
            match = found[0] if found is not None else None
            bad_found = _first(unwanted, text, self._cursor)
            if bad_found is not None and (match is None or bad_found[0].start() < match.start()):
                bad, which = bad_found
                line = text.count("\n", 0, bad.start()) + 1
                raise UnexpectedOutput(self._say(wanted, f"expected, but {which.shown!r} appeared first (console"
                                                         f" line {line}: {bad.group(0)!r})"))
            if match is not None:
                self._cursor = match.end()
                return match
            if ended:
                raise TargetError(self._say(wanted, f"never appeared: the port closed ({self._reader.end_reason})"))
            if time.monotonic() >= deadline:
                raise TimeoutExpired(self._say(wanted, f"not seen within {limit:g} s"))
            time.sleep(self.POLL_S)

    def _say(self, wanted: list[_Wanted], what: str) -> str:
        names = " or ".join(repr(w.shown) for w in wanted)
        return (f"{self._reader.name} (log {self._reader.log_path}): {names} {what}; last console lines:\n"
                f"{self._reader.describe_tail()}")
