"""The pins of the RT700 firmware's upstream sources: `firmware/rt700/pins.toml` as typed values.

Why one TOML file of exact commits instead of west or git submodules: the firmware build needs
repositories from three owners (ExecuTorch, its flatbuffers/flatcc submodules, NXP's SDK
projects), CI runs offline from a lab mirror that lacks some release commits, and a build must
be reproducible from one reviewed file. The file is checked here, completely, before any git
runs, so a typo reads as "<file>: [[pin]] #3 (owner/name): key 'commit' ..." and not as a git
error halfway through a workspace.
"""

from __future__ import annotations

import re
import shlex
import tomllib
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from hil.base.errors import BuildError
from hil.base.paths import FIRMWARE_DIR, REPO_ROOT

DEFAULT_PINS = FIRMWARE_DIR / "rt700" / "pins.toml"

_SHA = re.compile(r"[0-9a-f]{40}\Z")
_REPO = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*/[A-Za-z0-9][A-Za-z0-9_.-]*\Z")
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_PLAIN = re.compile(r"[A-Za-z0-9_./+:@%-]+\Z")
_PIN_KEYS = {"repo", "path", "commit", "bench_commit", "sparse"}


class PinsError(BuildError):
    """The pins file is missing or unreadable, is not TOML, or holds a missing or bad key."""


def shown(path: Path) -> str:
    """A path as people know it: relative to the repository when it lies inside, else as is."""
    try:
        return Path(path).resolve().relative_to(REPO_ROOT).as_posix()
    except ValueError:
        return str(path)


@dataclass(frozen=True)
class Pin:
    """One repository at one commit, at `path` inside the workspace."""

    repo: str  # "owner/name"
    path: str  # relative POSIX path inside the workspace
    commit: str  # 40 lowercase hex digits, present in the lab mirror
    bench_commit: str | None = None  # the exact upstream release, for benches with network access
    sparse: tuple[str, ...] = ()  # non-cone sparse-checkout patterns; () = the whole tree

    def wanted(self, bench_commits: bool) -> str:
        """The commit to check out: `bench_commit` when asked for and present, else `commit`."""
        return self.bench_commit if bench_commits and self.bench_commit else self.commit

    @property
    def depth(self) -> int:
        return len(PurePosixPath(self.path).parts)


@dataclass(frozen=True)
class Pins:
    """Every pin of one file, parents before children, and the build variables of the workspace."""

    source: Path
    pins: tuple[Pin, ...]
    env: tuple[tuple[str, str], ...] = ()  # (variable, path relative to the workspace)

    def variables(self, workspace: Path) -> list[tuple[str, Path]]:
        """The [env] variables with their absolute paths in `workspace`."""
        return [(name, workspace / rel) for name, rel in self.env]

    def env_file(self, workspace: Path) -> str:
        """`export NAME=path` lines: both `. workspace.env` in a shell and `include` in a Makefile read them.

        Paths are written bare when both read them alike; make keeps quotes, so only a path that
        needs them for the shell (a space, say) gets them.
        """
        lines = [f"# written by `python -m hil.firmware.workspace` from {shown(self.source)}; do not edit"]
        for name, path in self.variables(workspace):
            text = str(path)
            lines.append(f"export {name}={text if _PLAIN.match(text) else shlex.quote(text)}")
        return "\n".join(lines) + "\n"


def parents_first(pins: list[Pin] | tuple[Pin, ...]) -> tuple[Pin, ...]:
    """Pins ordered so that every pin comes after any pin whose path contains its path.

    Sorting by path depth is enough (a containing path is always shallower) and stable, so
    pins of equal depth keep the file's order.
    """
    return tuple(sorted(pins, key=lambda pin: pin.depth))


def load_pins(path: Path) -> Pins:
    """Read and check a pins file; raises PinsError naming the file and the offending key."""
    path = Path(path)
    where = shown(path)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise PinsError(f"{where}: no such pins file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise PinsError(f"{where}: cannot read the pins file ({exc})") from exc
    except tomllib.TOMLDecodeError as exc:
        raise PinsError(f"{where}: not valid TOML ({exc})") from exc

    unknown = sorted(set(data) - {"pin", "env"})
    if unknown:
        raise PinsError(f"{where}: unknown top-level key '{unknown[0]}' (expected [[pin]] and [env])")
    entries = data.get("pin")
    if not isinstance(entries, list) or not entries or not all(isinstance(e, dict) for e in entries):
        raise PinsError(f"{where}: key 'pin' must be one or more [[pin]] tables")
    pins = [_pin(entry, f"{where}: [[pin]] #{number}") for number, entry in enumerate(entries, 1)]

    seen: dict[str, str] = {}
    for pin in pins:
        if pin.path in seen:
            raise PinsError(f"{where}: key 'path' = '{pin.path}' is used by both {seen[pin.path]} and {pin.repo}")
        seen[pin.path] = pin.repo

    env = data.get("env", {})
    if not isinstance(env, dict):
        raise PinsError(f"{where}: key 'env' must be a table of VARIABLE = \"path/in/workspace\"")
    variables = []
    for name, value in env.items():
        if not _ENV_NAME.match(name):
            raise PinsError(f"{where}: key 'env.{name}' is not a shell variable name")
        variables.append((name, _relative_path(value, f"{where}: key 'env.{name}'")))
    return Pins(source=path, pins=parents_first(pins), env=tuple(variables))


def _pin(entry: dict[str, Any], context: str) -> Pin:
    """One [[pin]] table, every key checked; `context` names the file and the entry."""
    repo = entry.get("repo")
    if isinstance(repo, str) and _REPO.match(repo):
        context = f"{context} ({repo})"
    unknown = sorted(set(entry) - _PIN_KEYS)
    if unknown:
        raise PinsError(f"{context}: unknown key '{unknown[0]}' (expected {', '.join(sorted(_PIN_KEYS))})")
    for key in ("repo", "path", "commit"):
        if key not in entry:
            raise PinsError(f"{context}: missing key '{key}'")
    if not isinstance(repo, str) or not _REPO.match(repo):
        raise PinsError(f"{context}: key 'repo' must be \"owner/name\", got {repo!r}")
    sparse = entry.get("sparse", [])
    if not isinstance(sparse, list) or not all(isinstance(p, str) and p.strip() for p in sparse):
        raise PinsError(f"{context}: key 'sparse' must be a list of non-empty pattern strings")
    bench = entry.get("bench_commit")
    path = _relative_path(entry["path"], f"{context}: key 'path'")
    if path == ".":
        raise PinsError(f"{context}: key 'path' must name a folder inside the workspace, not the workspace itself")
    return Pin(
        repo=repo,
        path=path,
        commit=_sha(entry["commit"], f"{context}: key 'commit'"),
        bench_commit=None if bench is None else _sha(bench, f"{context}: key 'bench_commit'"),
        sparse=tuple(p.strip() for p in sparse),
    )


def _sha(value: object, context: str) -> str:
    """A full commit id: abbreviations are refused, they can become ambiguous as a repository grows."""
    if not isinstance(value, str) or not _SHA.match(value.lower()):
        raise PinsError(f"{context} must be a full 40-hex-digit commit id, got {value!r}")
    return value.lower()


def _relative_path(value: object, context: str) -> str:
    """A path that stays inside the workspace, as normalised POSIX text."""
    if not isinstance(value, str) or not value.strip():
        raise PinsError(f"{context} must be a non-empty relative path, got {value!r}")
    path = PurePosixPath(value.strip())
    if path.is_absolute() or "\\" in value or any(part in ("..", ".git") for part in path.parts):
        raise PinsError(f"{context} must be a relative path inside the workspace, got {value!r}")
    return path.as_posix()
