"""What the Inspector logs while it reads a dump, gathered into the profile's warnings instead of stderr.

ExecuTorch's Inspector logs one line per delegated event it cannot map ("No delegate mapping found
for delegate with instruction id N"): a dump read with another program's ETRecord printed six such
lines before the harness's own one-line error. Here its logger is held for the duration: lines of
that kind become one warning naming the ETRecord and the instruction ids, any other line is kept
once, and nothing reaches the terminal.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

INSPECTOR_LOGGER = "executorch.devtools.inspector._inspector"
_NO_MAPPING = re.compile(r"No delegate mapping found for delegate with instruction id (\d+)")


class _Gathered(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage().strip())


@contextmanager
def inspector_warnings(etrecord_path: Path) -> Iterator[list[str]]:
    """Yield a list that holds, once the block ends, what the Inspector logged as harness warnings."""
    logger = logging.getLogger(INSPECTOR_LOGGER)
    handler, propagate = _Gathered(), logger.propagate
    logger.addHandler(handler)
    logger.propagate = False
    found: list[str] = []
    try:
        yield found
    finally:
        logger.removeHandler(handler)
        logger.propagate = propagate
        found += summarize(handler.messages, etrecord_path)


def summarize(messages: list[str], etrecord_path: Path) -> list[str]:
    """The unmapped-delegate lines as one warning, every other message once, in order."""
    unmapped = [int(m.group(1)) for m in map(_NO_MAPPING.search, messages) if m]
    others = list(dict.fromkeys(message for message in messages if not _NO_MAPPING.search(message)))
    if not unmapped:
        return others
    ids = ", ".join(str(i) for i in sorted(set(unmapped)))
    return [f"{len(unmapped)} delegated event(s) have no delegate mapping in ETRecord {etrecord_path} (instruction "
            f"id(s) {ids}): is it this program's ETRecord? (give --pte to check)", *others]
