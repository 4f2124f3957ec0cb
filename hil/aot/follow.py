"""Record what a model's code reads while it is exported: the dynamic half of the export cache's key.

How, in CPython 3.11 terms (the "Audit events table" of the `sys` docs; os.py for `_Environ`):

* an audit hook (`sys.addaudithook`) hears `open` (builtins.open, io.open, os.open, io.open_code:
  `torch.load`, `numpy.load`, `json.load` of an opened file), `os.listdir` / `os.scandir` (glob,
  Path.iterdir), and the events of what cannot be checked again: `socket.connect`,
  `socket.getaddrinfo`, `urllib.Request`, `subprocess.Popen`, `os.fork`, ...;
* `os.environ`'s class is swapped for a subclass that records each name read (`os.getenv`,
  `environ.get`, `[...]`, `in`: all go through `__getitem__`) and a walk over all of them. No audit
  event covers these reads. Swapping the class, not the object, also covers `from os import environ`;
* `os.stat` is wrapped, so `os.path.exists(ckpt)` before a `torch.load(ckpt)` is followed too: a
  checkpoint that appears later must miss.

Only reads made on behalf of the model count. A file or folder counts when some frame between the
read and the export's own frame runs the model's code: the model file, or code outside the Python
installation and outside et-hil (a user's helper, a checkout on PYTHONPATH), so `torch.load(path)`
counts though torch opens the file. A variable or a path check counts when the model's code asks
itself (through the standard library at most): torch consults its own settings inside the traced
forward too. The framework's own reads (torch's, the harness's cache writes) are keyed by their
versions instead; files of the installation and /dev/null are ignored, and a
`__pycache__/*.pyc` counts as its source file. An audit hook cannot be removed, so it is
installed once and does nothing outside a recording.

Files opened by native code without Python's `open` (safetensors' `load_file`, `torch.jit.load` of a path,
`ctypes` into libc) are followed at the system-call level (hil.aot.native_trace) and added the same way, when
no Python `open` of the window named them (those were judged above) and they lie outside the system's folders,
the installation and et-hil; files the window wrote are its products, not reads. Where native reads cannot be
followed (no strace), the export is not cached and says so.
"""

from __future__ import annotations

import contextlib
import importlib.util
import linecache
import os
import sys
import sysconfig
import threading
from collections.abc import Iterator
from pathlib import Path
from types import FrameType
from typing import Any

from hil.aot import native_trace
from hil.aot import reads as r
from hil.aot.deps import is_installed
from hil.base.paths import PACKAGE_DIR

# Audit events whose input cannot be checked again later: an export that raises one is not cached.
UNFOLLOWABLE = {
    "socket.connect": "connected a socket to {1}", "socket.sendto": "sent on a socket to {1}",
    "socket.getaddrinfo": "looked up host {0}", "socket.gethostbyname": "looked up host {0}",
    "socket.gethostbyaddr": "looked up address {0}", "urllib.Request": "opened {0}",
    "http.client.connect": "connected to {1}:{2}", "ftplib.connect": "connected to {1}",
    "subprocess.Popen": "started {0}", "os.system": "ran {0}", "os.exec": "ran {0}",
    "os.posix_spawn": "started {0}", "os.spawn": "started {1}", "os.fork": "forked a process",
    "os.forkpty": "forked a process", "sqlite3.connect": "opened database {0}",
}
_DETERMINISTIC_DEVICES = ("/dev/null", "/dev/zero")
_LINECACHE = linecache.__file__
_LISTINGS = ("os.listdir", "os.scandir")
_WRITE_ONLY = (os.O_WRONLY,)
_FRESH = os.O_TRUNC | os.O_EXCL  # a read of nothing the file held before


_HARNESS = str(PACKAGE_DIR) + os.sep
# The standard library's folders, never site-packages (a venv's platstdlib holds its site-packages).
_PATHS = {name: os.path.join(folder, "") for name, folder in sysconfig.get_paths().items()}
_STDLIB = tuple(folder for folder in dict.fromkeys((_PATHS["stdlib"], _PATHS["platstdlib"]))
                if not any(_PATHS[lib].startswith(folder) for lib in ("purelib", "platlib")))


def _source_of(path: str) -> str:
    """A module imported from its `__pycache__/*.pyc` (a run-time `importlib.import_module`) counts
    by its source: the .pyc is rewritten whenever the source changes, so it is keyed by what made it."""
    if path.endswith(".pyc") and os.path.basename(os.path.dirname(path)) == "__pycache__":
        with contextlib.suppress(ValueError):
            return importlib.util.source_from_cache(path)
    return path


class _Recording:
    """The reads of one export, gathered from whichever thread the model's code runs in."""

    def __init__(self, model_file: Path | None, anchor: FrameType, ignore: tuple[str, ...]) -> None:
        self.model_file = str(model_file) if model_file else None
        self.model_dir = os.path.dirname(self.model_file) if self.model_file else None
        self.model_installed = bool(self.model_file) and _installed(str(self.model_file))
        self.anchor = anchor
        self.ignore = ignore
        self.files: dict[str, str] = {}
        self.folders: dict[str, str] = {}
        self.probes: dict[str, str] = {}
        self.env: dict[str, str | None] = {}
        self.env_written: set[str] = set()
        self.env_names: str | None = None
        self.cwd: str | None = None
        self.unfollowed: list[str] = []
        self.python_seen: set[str] = set()  # every path a Python open or listing of the window named
        self.lock = threading.Lock()

    def result(self) -> r.Reads:
        return r.Reads(dict(self.files), dict(self.folders), dict(self.probes), dict(self.env), self.env_names,
                       self.cwd, tuple(dict.fromkeys(self.unfollowed)))

    def key(self, path: Any) -> str | None:
        """The recorded key of a path the model used; None when it is not the model's to key."""
        if isinstance(path, int) or path is None:
            return None
        text = os.fsdecode(os.fspath(path))
        full = _source_of(os.path.abspath(text))
        beside_model = bool(self.model_dir) and full.startswith(f"{self.model_dir}{os.sep}")
        # et-hil's code and the installation's are keyed as the export's code and versions; a model
        # file installed as a package still has its own data files followed.
        ignored = any(full == root or full.startswith(root + os.sep) for root in self.ignore)
        if (ignored or full in _DETERMINISTIC_DEVICES or full.startswith(_HARNESS)
                or _installed(full) and not (beside_model and self.model_installed)):
            return None
        if not os.path.isabs(text):
            self.cwd = os.getcwd()  # a relative path names another file from another working folder
        return os.path.relpath(full, self.model_dir) if beside_model else full


_state = threading.local()
_active: _Recording | None = None
_hook_installed = False
_user_files: dict[str, bool] = {}
_installed_paths: dict[str, bool] = {}


def _installed(path: str) -> bool:
    known = _installed_paths.get(path)
    if known is None:
        known = _installed_paths[path] = is_installed(Path(path))
    return known


def _is_user_code(filename: str, model_file: str | None) -> bool:
    if filename == model_file:
        return True
    known = _user_files.get(filename)
    if known is None:
        known = (os.path.isabs(filename) and not filename.startswith(_HARNESS)
                 and os.path.isfile(filename) and not _installed(filename))
        _user_files[filename] = known
    return known


def _asked_by_model(rec: _Recording) -> bool:
    """True when the innermost frame outside the standard library and et-hil runs the model's code:
    for variables and path checks, which torch does for itself inside the model's forward
    (TORCH_BISECT_*, its inductor folders) and which are no input the model chose."""
    frame: FrameType | None = sys._getframe()  # never fails, though C may raise an event with no caller
    while frame is not None and frame is not rec.anchor:
        filename = frame.f_code.co_filename
        if not (filename.startswith(("<", _HARNESS)) or filename.startswith(_STDLIB)):
            return _is_user_code(filename, rec.model_file)
        frame = frame.f_back
    return False


def _on_behalf_of_model(rec: _Recording) -> bool:
    """True when a frame between here and the export's own frame runs the model's code; in a thread
    that did not start below the export frame, any such frame counts. Source read for a traceback
    or a stack trace torch keeps (linecache) is no input of the model."""
    frame: FrameType | None = sys._getframe()  # never fails, though C may raise an event with no caller
    found = False
    while frame is not None and frame is not rec.anchor:
        filename = frame.f_code.co_filename
        if filename == _LINECACHE:
            return False
        found = found or _is_user_code(filename, rec.model_file)
        frame = frame.f_back
    return found


@contextlib.contextmanager
def _busy() -> Iterator[bool]:
    """Our own hashing opens files too: those are not the model's reads."""
    if getattr(_state, "busy", False):
        yield False
        return
    _state.busy = True
    try:
        yield True
    finally:
        _state.busy = False


def _audit(event: str, args: tuple[Any, ...]) -> None:
    rec = _active
    if rec is None or (event != "open" and event not in _LISTINGS and event not in UNFOLLOWABLE):
        return
    if event == "open" or event in _LISTINGS:  # judged here, whatever the verdict: the native trace leaves it alone
        with contextlib.suppress(TypeError, ValueError):
            rec.python_seen.add(os.path.abspath(os.fsdecode(os.fspath(args[0] if args[0] is not None else "."))))
    with _busy() as free:
        if not free or not _on_behalf_of_model(rec):
            return
        try:
            _record_event(rec, event, args)
        except Exception as exc:  # an audit hook that raises would break the model's own call
            rec.unfollowed.append(f"a read et-hil could not follow ({event}: {type(exc).__name__}: {exc})")


def _record_event(rec: _Recording, event: str, args: tuple[Any, ...]) -> None:
    if event in UNFOLLOWABLE:
        shown = [str(a)[:120] for a in args] + [""] * 3
        rec.unfollowed.append(f"the model {UNFOLLOWABLE[event].format(*shown)}")
        return
    if event in _LISTINGS:
        if _by_import_system():
            return  # finding a module lists sys.path folders; the module found is followed when opened
        key = rec.key(args[0] if args and args[0] is not None else ".")
        if key is not None:
            with rec.lock:
                rec.folders.setdefault(key, r.folder_state(r.where(key, _dir(rec))))
        return
    path, mode, flags = (list(args) + [None, None, None])[:3]
    flags = flags if isinstance(flags, int) else 0
    if isinstance(mode, str) and not any(c in mode for c in "r+"):
        return  # opened to write (the model's log, a file it makes): no read of what was there
    if (flags & os.O_ACCMODE) in _WRITE_ONLY or flags & _FRESH:
        return
    key = rec.key(path)
    if key is None or key in rec.files:
        return
    state = r.file_state(r.where(key, _dir(rec)))
    if state == r.SPECIAL:  # /dev/urandom, a pipe: nothing to hash
        rec.unfollowed.append(f"the model read {os.path.abspath(os.fsdecode(os.fspath(path)))}, not a regular file")
    with rec.lock:
        rec.files.setdefault(key, state)


def _by_import_system() -> bool:
    frame: FrameType | None = sys._getframe()
    while frame is not None:
        if frame.f_code.co_filename.startswith("<frozen importlib"):
            return True
        frame = frame.f_back
    return False


def _dir(rec: _Recording) -> Path | None:
    return Path(rec.model_dir) if rec.model_dir else None


class _RecordingEnviron(os._Environ):  # type: ignore[misc,name-defined]
    """os.environ while a recording runs: each name the model reads is noted with its value's hash."""

    def __getitem__(self, key: Any) -> Any:
        _note_env(key)
        return super().__getitem__(key)

    def __setitem__(self, key: Any, value: Any) -> None:
        _note_env(key, written=True)
        super().__setitem__(key, value)

    def __delitem__(self, key: Any) -> None:
        _note_env(key, written=True)
        super().__delitem__(key)

    def __iter__(self) -> Iterator[Any]:
        rec = _active
        if rec is not None and not getattr(_state, "busy", False):
            with _busy():
                if _asked_by_model(rec) and rec.env_names is None:
                    rec.env_names = r.env_names_state()
        return super().__iter__()


def _note_env(key: Any, *, written: bool = False) -> None:
    """Note a read by the model; a variable set during the export (by the model, or by torch as it
    sets TORCHINDUCTOR_CACHE_DIR) before the model read it is no input: later reads see that value."""
    rec = _active
    if rec is None or getattr(_state, "busy", False):
        return
    with _busy():
        name = os.fsdecode(key) if isinstance(key, (bytes, str)) else str(key)
        if name in rec.env or name in rec.env_written or not (written or _asked_by_model(rec)):
            return
        with rec.lock:
            if written:
                rec.env_written.add(name)
            else:
                rec.env.setdefault(name, r.env_state(name))


_real_stat = os.stat


def _recording_stat(path: Any, *args: Any, **kwargs: Any) -> os.stat_result:
    rec = _active
    if rec is not None and not getattr(_state, "busy", False):
        with _busy():
            if _asked_by_model(rec):
                key = rec.key(path)
                if key is not None and key not in rec.probes:
                    with rec.lock:
                        rec.probes[key] = r.path_kind(r.where(key, _dir(rec)))
    return _real_stat(path, *args, **kwargs)


@contextlib.contextmanager
def recording(model_file: Path | None, *, ignore: tuple[Path, ...] = ()) -> Iterator[_Recording]:
    """Record, until the block ends, what the model's code (see the module docstring) reads.

    `model_file` counts as the model's code even when installed; `ignore` are the harness's own
    folders (the cache entry being written). One recording at a time per process.
    """
    global _active, _hook_installed
    if _active is not None:
        raise RuntimeError("an export is already being recorded in this process")
    if not _hook_installed:
        sys.addaudithook(_audit)
        _hook_installed = True
    rec = _Recording(model_file, sys._getframe(2), tuple(os.path.abspath(p) for p in ignore))
    environs = [(env, env.__class__) for env in (os.environ, getattr(os, "environb", None)) if env is not None]
    for env, _ in environs:
        env.__class__ = _RecordingEnviron
    os.stat = _recording_stat
    _active = rec
    window = _native_window(rec) if model_file is not None else None
    try:
        yield rec
        opens = _native_opens(rec, window)
    finally:
        _active = None
        os.stat = _real_stat
        for env, cls in environs:
            env.__class__ = cls
        if window is not None:
            window.close()
    _record_native(rec, opens)


def _native_window(rec: _Recording) -> native_trace.Window | None:
    window = native_trace.Window()
    try:
        window.start()
    except native_trace.NativeTraceError as exc:
        rec.unfollowed.append(f"reads by native code cannot be followed: {exc}")
        return None
    return window


def _native_opens(rec: _Recording, window: native_trace.Window | None) -> list[native_trace.NativeOpen]:
    if window is None:
        return []
    try:
        return window.stop()
    except native_trace.NativeTraceError as exc:
        rec.unfollowed.append(f"reads by native code cannot be followed: {exc}")
        return []


# The system's own folders: its libraries (the dynamic loader's searches), its configuration, kernel interfaces.
_SYSTEM = tuple(os.path.join(folder, "") for folder in ("/usr", "/lib", "/lib32", "/lib64", "/libx32", "/bin",
                                                         "/sbin", "/etc", "/proc", "/sys", "/dev", "/run"))


def _record_native(rec: _Recording, opens: list[native_trace.NativeOpen]) -> None:
    """Add the window's opens made by native code: those no Python open named, of files the window did not
    write itself, outside the system's folders (and, as for Python's reads, the installation and et-hil)."""
    produced: set[str] = set()
    seen: set[str] | None = None
    for opened in opens:
        path = opened.path
        if not os.path.isabs(path) or path.startswith(_SYSTEM) or path in produced or "O_PATH" in opened.flags:
            continue
        if opened.writes:
            produced.add(path)
            continue
        if seen is None:
            seen = rec.python_seen | {os.path.realpath(p) for p in rec.python_seen}
        key = None if path in seen else rec.key(path)
        if key is None or key in rec.files or key in rec.folders:
            continue
        where = r.where(key, _dir(rec))
        if "O_DIRECTORY" in opened.flags:
            rec.folders[key] = r.folder_state(where)
            continue
        rec.files[key] = r.file_state(where)
        if rec.files[key] == r.SPECIAL:
            rec.unfollowed.append(f"the model's native code read {path}, not a regular file")
