"""The Inspector's log lines while a dump is read: one warning for unmapped delegates, nothing on the terminal.

Truths: the messages are logged here under the logger name ExecuTorch's Inspector uses
(`executorch/devtools/inspector/_inspector.py`: `log = logging.getLogger(__name__)`); the expected
warnings are written out by hand.
"""

from __future__ import annotations

import logging
from pathlib import Path

from hil.analysis.inspector_log import inspector_warnings, summarize

RECORD = Path("runs/x/etrecord.bin")


class _Kept(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


def test_the_inspectors_lines_become_warnings_and_never_reach_the_root_logger():
    inspector = logging.getLogger("executorch.devtools.inspector._inspector")
    root_kept, propagate_before = _Kept(), inspector.propagate
    logging.getLogger().addHandler(root_kept)
    try:
        with inspector_warnings(RECORD) as found:
            inspector.warning("No delegate mapping found for delegate with instruction id %d", 7)
            inspector.warning("  No delegate mapping found for delegate with instruction id 3  ")
            inspector.warning("No delegate mapping found for delegate with instruction id 7")
            inspector.error("  the debug handle map is empty ")
            inspector.info("Loaded 1 run")  # below WARNING: not gathered
            assert found == []  # filled when the block ends
        inspector.warning("after the block")
    finally:
        logging.getLogger().removeHandler(root_kept)
    assert found == [
        "3 delegated event(s) have no delegate mapping in ETRecord runs/x/etrecord.bin (instruction id(s) 3, 7): "
        "is it this program's ETRecord? (give --pte to check)",
        "the debug handle map is empty"]
    assert inspector.propagate is propagate_before and root_kept.lines == ["after the block"]


def test_other_messages_are_kept_once_in_order_without_a_mapping_warning():
    assert summarize(["b", "a", "b", "c"], RECORD) == ["b", "a", "c"]
    assert summarize([], RECORD) == []
