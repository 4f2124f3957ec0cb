"""One exception family, so the CLI and the pytest plugin can show a clean message instead of a traceback."""

from __future__ import annotations


class HilError(Exception):
    """A failure the user can act on; the message says what, where, and which file holds the evidence."""


class BoardConfigError(HilError):
    """A board file is missing, unreadable or holds a bad value."""


class ModelError(HilError):
    """A model spec cannot be found, imported, or exported."""


class BuildError(HilError):
    """A firmware image failed to build."""


class TargetError(HilError):
    """The target (QEMU or a real board) misbehaved: died, hung, or returned a bad result."""


class TimeoutExpired(TargetError):
    """Something that talks to a process, port or board did not answer in time."""


class AnalysisError(HilError):
    """An ETDump or ETRecord cannot be read or does not fit together."""
