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


class EnvironmentFault(HilError):
    """The machine lacks a part the run needs (a firmware source workspace, say): exit status 3. The message
    names the part, where it was looked for, and the command that provides it."""


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


class WriteError(HilError, OSError):
    """A file could not be written (a full disk, a read-only file system, a quota): the machine's fault,
    exit status 3. Still an OSError (errno, filename), so code that tolerates a failed write keeps doing so."""

    @classmethod
    def from_os(cls, exc: OSError, path: object) -> "WriteError":
        """`exc` re-said as one line naming `path` and the errno's name (ENOSPC, EROFS, EDQUOT, ...)."""
        if isinstance(exc, WriteError):
            return exc
        import errno as errno_names

        code = exc.errno
        name = errno_names.errorcode.get(code, "") if code is not None else ""
        reason = exc.strerror or str(exc) or type(exc).__name__
        return cls(code, f"cannot write {path}: {reason}" + (f" ({name}, errno {code})" if name else ""), str(path))

    @classmethod
    def if_write_error(cls, exc: OSError, where: object) -> "WriteError | None":
        """`exc` as a WriteError when its errno says a write failed for want of room or permission to
        write (`where`: the path to name when `exc` names none); None for any other OSError."""
        import errno as codes

        if isinstance(exc, WriteError):
            return exc
        if exc.errno not in {codes.ENOSPC, codes.EROFS, codes.EDQUOT, codes.EFBIG}:
            return None
        return cls.from_os(exc, exc.filename if exc.filename is not None else where)

    def __str__(self) -> str:
        return str(self.strerror)
