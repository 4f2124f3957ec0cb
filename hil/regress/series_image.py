"""The QEMU image a nightly run must have: the one its history series was measured on.

Why: with the board file's `auto` choice, a run on a machine without the firmware sources used to
fall back to the replay image. Its host nanoseconds are another time base than the runtime image's
emulated instruction counts, so the run could not be judged against its own series, and an
unattended nightly that quietly stopped judging is a gate that can be fooled. When the history's
latest passed run of the program is a runtime run, the run therefore *requires* the runtime image:
without it, it fails naming the missing part (hil.firmware.qemu_firmware) instead of replaying.
An explicit choice (`--hil-firmware replay`, a board file's `firmware = "replay"`) is the user's
and is kept; that run is keyed by its own time base and said to be not judged.
"""

from __future__ import annotations

from pathlib import Path

from hil.records.profile_model import Profile
from hil.firmware.qemu_firmware import Requirement
from hil.regress.history import series_time_base
from hil.regress.timebase import RUNTIME_INSTRUCTIONS


def series_of(model_name: str, delegate: str | None, board: str) -> str:
    """The history's series name of a program (Profile.series: the model, plus a delegate it was lowered to)."""
    return Profile.from_json({"board": board, "model": model_name, "delegate": delegate, "events": []}).series


def required_by_history(history: Path | None, model_name: str, delegate: str | None, board: str) -> Requirement | None:
    """Requirement("runtime", why) when the history's series of this program on `board` is a runtime series."""
    if history is None:
        return None
    series = series_of(model_name, delegate, board)
    base = series_time_base(Path(history), series, board)
    if base is None or base.kind != RUNTIME_INSTRUCTIONS:
        return None
    return Requirement("runtime", f"the history {history} measured {series} on {board} with the runtime image "
                                  f"({base.key}); a replay run would not be comparable")
