"""One exception family, so the CLI and the pytest plugin can show a clean message instead of a traceback."""

from __future__ import annotations


class HilError(Exception):
    """A failure the user can act on; the message says what, where, and which file holds the evidence."""


class InputError(HilError):
    """The user asked for something the harness refuses before doing any work (exit status 2):
    a count, time or path out of range, a board file value, a model that does not fit the board."""


class BoardConfigError(InputError):
    """A board file is missing, unreadable or holds a bad value."""


class ModelError(HilError):
    """A model spec cannot be found, imported, or exported."""


class ModelSpecError(ModelError, InputError):
    """A model spec names no model: an unknown built-in, a missing file, a malformed `file.py:factory`."""


class BuildError(HilError):
    """A firmware image failed to build."""


class TargetError(HilError):
    """The target (QEMU or a real board) misbehaved: died, hung, or returned a bad result."""


class TimeoutExpired(TargetError):
    """Something that talks to a process, port or board did not answer in time."""


class AnalysisError(HilError):
    """An ETDump or ETRecord cannot be read or does not fit together."""


class FileContentError(AnalysisError, InputError):
    """A file a user or an earlier run provides (profile.json, manifest.json, history.db, a baseline, a .pte)
    does not hold what its kind must: refused before it is used (exit status 2), naming the file and the field."""


class TargetFault(TargetError):
    """The target took a fault (HardFault, BusFault, ...); `fault` is the report written to fault.json."""

    def __init__(self, message: str, fault: dict | None = None) -> None:
        super().__init__(message)
        self.fault = fault or {}


class TargetHang(TimeoutExpired):
    """The target ran past its deadline without reaching the breakpoint; `fault` says where it was."""

    def __init__(self, message: str, fault: dict | None = None) -> None:
        super().__init__(message)
        self.fault = fault or {}
