"""`hil sources`: one folder holding every source the RT700 firmware build needs, at pinned commits.

Why not `west update` plus `git submodule update`: those follow manifests and branches that move,
need the network and fetch far more than the firmware uses. Here one reviewed file
(`firmware/rt700/pins.toml`) names each repository, its commit, its place and the paths the build
needs, and a second run over a finished workspace only compares stamps.

Per pin, parents before children: `git init`, origin, get the commit, sparse patterns, `git
checkout --detach`, check HEAD, stamp (`.git/hil-pin.json`). The source is `<base>/<owner>/<name>`:

- a URL base (https://github.com by default): `git fetch --depth 1 origin <sha>`; if the server
  will not serve a commit by id, a full fetch of its branches and tags;
- a local folder of `owner/name` repositories (bare, with a `.git`, or `name.git`; symlinks
  followed), as offline labs have: its object store is borrowed (`objects/info/alternates`, as
  `git clone --shared` does), so nothing is copied, the mirror is only read, and it must stay
  where it is. Fetching from it would not do: a lab mirror without its large blobs makes `git
  upload-pack` abort the whole pack, while a checkout from borrowed objects only misses those
  files; they are reported as a warning, once per repository and run, never silently.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import shlex
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from hil.base.no_follow import no_follow
from hil.base.atomic import write_text
from hil.base.errors import BuildError
from hil.firmware.git_cmd import GitTimeout, WorkspaceError, git, why as _why
from hil.firmware.pins import Pin, Pins, shown
from hil.base.paths import cache_dir

DEFAULT_BASE = "https://github.com"
FETCH_TIMEOUT_S = 1800.0  # talking to a server: a cold ExecuTorch fetch over a slow link
PROBE_TIMEOUT_S = 15.0  # `--optional`: how long the public host may take to say it is there
STAMP = "hil-pin.json"  # in each checkout's .git: the pin it was checked out for
ENV_FILE = "workspace.env"
SUMMARY_FILE = "workspace.json"
_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://|[^/:]+@[^/:]+:")
_MISSING_BLOB = re.compile(r"error: (invalid object|unable to read sha1 file)")
_SHOWN_PATHS = 10

Say = Callable[[str], None]


def workspace_paths(dest: Path | None = None) -> dict[str, str]:
    """MCUX_SDK, EXECUTORCH_ROOT, NEUTRON_LIB_DIR as `dest`'s workspace.env names them ({} if none).

    Why read the file: it is the one place (written from pins.toml's [env]) that says where a
    workspace keeps each source; `hil doctor` and the firmware's CMake read it rather than guess.
    """
    env_file = (dest or Path(os.environ.get("RT700_SDK_DIR") or default_dest())) / ENV_FILE
    try:
        lines = env_file.read_text(encoding="utf-8").splitlines()
    except OSError:
        return {}
    found: dict[str, str] = {}
    for line in lines:
        match = re.match(r"(?:export )?([A-Z_]+)=(.*)$", line.strip())
        if match:
            value = shlex.split(match.group(2))
            found[match.group(1)] = value[0] if value else ""
    return found


def default_dest() -> Path:
    """Where the workspace goes without --dest: beside the harness's other caches (hil/base/paths.py)."""
    return cache_dir() / "rt700-sdk"


def is_url(base: str) -> bool:
    return bool(_URL.match(base))


def repo_url(base: str, repo: str) -> str:
    return base + repo if base.endswith(":") else f"{base.rstrip('/')}/{repo}"


@dataclass(frozen=True)
class Source:
    """Where one repository comes from: a URL to fetch from, or a local object store to borrow."""

    where: str  # for messages and remote.origin.url
    objects: Path | None = None


def find_local(base: Path, repo: str) -> Source:
    """`owner/name` (or `owner/name.git`) in a local base folder: bare or not, symlinks followed."""
    for candidate in (base / repo, base / f"{repo}.git"):
        if not candidate.is_dir():
            continue
        real = candidate.resolve()
        # The ceiling keeps git from answering for some repository that merely contains the folder.
        found = git(real, "rev-parse", "--path-format=absolute", "--git-common-dir",
                    env={"GIT_CEILING_DIRECTORIES": str(real.parent)})
        objects = Path(found.stdout.strip()) / "objects"
        if found.returncode == 0 and objects.is_dir():
            return Source(str(candidate), objects)  # named as the user knows it, borrowed resolved
    raise WorkspaceError(f"{repo}: no repository at {base / repo} (nor {base / repo}.git)")


def find_url(base: str, repo: str, timeout: float) -> Source:
    """The URL that answers for `owner/name`: `<base>/owner/name`, else with `.git` as hosts allow."""
    url = repo_url(base, repo)
    why = ""
    for candidate in (url,) if url.endswith(".git") else (url, url + ".git"):
        probe = git(None, "ls-remote", candidate, "HEAD", timeout=timeout)
        if probe.returncode == 0:
            return Source(candidate)
        why = why or _why(probe.stderr)
    raise WorkspaceError(f"{repo}: no repository at {url} ({why})")


@dataclass(frozen=True)
class Outcome:
    """What one pin's checkout holds."""

    pin: Pin
    commit: str
    source: str
    up_to_date: bool
    absent: tuple[str, ...] = ()  # not checked out: their blobs are missing from the source
    deleted: tuple[str, ...] = ()  # blob present, yet gone from the folder


@dataclass
class Assembler:
    """Checks out every pin into `dest` from `base` (a URL or an absolute folder); one per run."""

    pins: Pins
    dest: Path
    base: str
    bench_commits: bool = False
    fetch_timeout: float = FETCH_TIMEOUT_S
    say: Say = print
    warn: Say = field(default=lambda line: print(line, file=sys.stderr))
    progress: Callable[[float], None] = lambda _fraction: None  # the share of the pins done, before each

    def assemble(self) -> list[Outcome]:
        """Every pin in order, under a lock (two runs into one folder would fight over git's locks)."""
        self.dest.mkdir(parents=True, exist_ok=True)
        with open(self.dest / ".hil-workspace.lock", "w", opener=no_follow) as lock:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                self.say(f"waiting for another assembly of {self.dest} to finish ...")
                fcntl.flock(lock, fcntl.LOCK_EX)
            outcomes = []
            for done, pin in enumerate(self.pins.pins):
                self.progress(done / len(self.pins.pins))
                try:
                    outcomes.append(self.sync(pin))
                except GitTimeout as exc:  # the runner knows the command, not the pin
                    raise GitTimeout(f"{pin.repo} ({pin.wanted(self.bench_commits)}) from {self.base}: {exc}") from exc
            for name, path in self.pins.variables(self.dest):
                if not path.is_dir():
                    raise WorkspaceError(f"{name}={path} does not exist after checking out every pin; its pin "
                                         f"or `sparse` patterns in {shown(self.pins.source)} leave it out")
            summary = {"pins": shown(self.pins.source), "bench_commits": self.bench_commits,
                       "env": {name: str(path) for name, path in self.pins.variables(self.dest)},
                       "repos": [{"repo": o.pin.repo, "path": o.pin.path, "commit": o.commit, "source": o.source,
                                  "absent": list(o.absent)} for o in outcomes]}
            _write_if_changed(self.dest / ENV_FILE, self.pins.env_file(self.dest))
            _write_if_changed(self.dest / SUMMARY_FILE, json.dumps(summary, indent=2) + "\n")
        return outcomes

    def sync(self, pin: Pin) -> Outcome:
        """One pin: nothing when its stamp and HEAD already match it, else init, fetch, checkout."""
        commit = pin.wanted(self.bench_commits)
        work = self.dest / pin.path
        stamp = _read_stamp(work)
        if (stamp.get("repo"), stamp.get("commit"), stamp.get("sparse")) == (pin.repo, commit, list(pin.sparse)) \
                and _head(work) == commit:
            outcome = Outcome(pin, commit, str(stamp.get("source", "")), True,
                              tuple(stamp.get("absent", ())), tuple(stamp.get("deleted", ())))
            self._report_absent(outcome)
            return outcome

        started = time.monotonic()
        work.mkdir(parents=True, exist_ok=True)
        if not (work / ".git").is_dir():  # never run git in `work` before this: it would use the parent's
            self._git(pin, commit, work, "init", "-q")
        gitdir = work / ".git"
        (gitdir / STAMP).unlink(missing_ok=True)  # an interrupted run must never look finished
        source = self._get_commit(pin, commit, work)
        widened = self._write_sparse(pin, commit, work)
        done = git(work, "-c", "advice.detachedHead=false", "checkout", "-q", "--detach", commit)
        head = _head(work)
        if done.returncode != 0 and not (head == commit and _only_missing_blobs(done.stderr)):
            raise WorkspaceError(f"{pin.repo}: checkout of {commit} in {work} failed: {_why(done.stderr)}")
        if head != commit:
            raise WorkspaceError(f"{pin.repo}: HEAD of {work} is {head or 'unborn'} after checking out {commit}")
        if widened:  # the "/*" checkout has brought every file back; now sparse can go
            self._git(pin, commit, work, "config", "core.sparseCheckout", "false")
            (gitdir / "info" / "sparse-checkout").unlink(missing_ok=True)
        outcome = Outcome(pin, commit, source.where, False, *_absent_files(work))
        write_text(gitdir / STAMP, json.dumps({
            "repo": pin.repo, "commit": commit, "sparse": list(pin.sparse), "source": source.where,
            "absent": list(outcome.absent), "deleted": list(outcome.deleted)}, indent=2) + "\n")
        self.say(f"  {pin.repo:<40} {commit[:12]}  {pin.path}  checked out in {time.monotonic() - started:.1f} s")
        self._report_absent(outcome)
        return outcome

    def _get_commit(self, pin: Pin, commit: str, work: Path) -> Source:
        """Make `commit` available in the repository at `work`; returns where it came from."""
        hint = ("drop --bench-commits or use a git base that has it" if commit != pin.commit
                else f"update the mirror or the pin in {shown(self.pins.source)}")
        if not is_url(self.base):
            source = find_local(Path(self.base), pin.repo)
            self._git(pin, commit, work, "config", "remote.origin.url", source.where)
            _borrow(work / ".git", source.objects)
            if not _has_commit(work, commit):
                raise WorkspaceError(f"{pin.repo}: commit {commit} not found in {source.where} "
                                     f"(the mirror lacks it; {hint})")
            return source
        if _has_commit(work, commit):
            return Source(git(work, "config", "remote.origin.url").stdout.strip() or repo_url(self.base, pin.repo))
        source = find_url(self.base, pin.repo, self.fetch_timeout)
        self.say(f"  {pin.repo:<40} {commit[:12]}  fetching from {source.where} ...")
        self._git(pin, commit, work, "config", "remote.origin.url", source.where)
        self._git(pin, commit, work, "config", "remote.origin.fetch", "+refs/heads/*:refs/remotes/origin/*")
        by_id = git(work, "fetch", "-q", "--no-tags", "--depth", "1", "origin", commit, timeout=self.fetch_timeout)
        if by_id.returncode == 0 and _has_commit(work, commit):
            return source
        # The server would not serve a commit by id (protocol v0 without allowReachableSHA1InWant).
        full = git(work, "fetch", "-q", "--tags", "origin", timeout=self.fetch_timeout)
        if _has_commit(work, commit):
            return source
        if full.returncode != 0:
            raise WorkspaceError(f"{pin.repo}: fetching commit {commit} from {source.where} failed: {_why(full.stderr)}")
        raise WorkspaceError(f"{pin.repo}: commit {commit} not found in {source.where} "
                             f"(no branch or tag holds it; {hint})")

    def _write_sparse(self, pin: Pin, commit: str, work: Path) -> bool:
        """Write the patterns the next checkout applies; True when sparse must be switched off after it.

        Files, not `git sparse-checkout set`: that command rewrites the working tree at once and
        aborts over a missing blob, while checkout writes what it can. Dropping the patterns takes
        a checkout with "/*" first, or the files they left out would stay out.
        """
        sparse_file = work / ".git" / "info" / "sparse-checkout"
        if pin.sparse:
            self._git(pin, commit, work, "config", "core.sparseCheckout", "true")
            self._git(pin, commit, work, "config", "core.sparseCheckoutCone", "false")
            write_text(sparse_file, "\n".join(pin.sparse) + "\n")
            return False
        if sparse_file.is_file():
            write_text(sparse_file, "/*\n")
            return True
        return False

    def _git(self, pin: Pin, commit: str, work: Path, *args: str) -> subprocess.CompletedProcess[str]:
        done = git(work, *args)
        if done.returncode != 0:
            raise WorkspaceError(f"{pin.repo} ({commit}): `git {' '.join(args)}` in {work} failed: {_why(done.stderr)}")
        return done

    def _report_absent(self, outcome: Outcome) -> None:
        """One warning per repository and run: never a silent success over a partial checkout."""
        for paths, why in ((outcome.absent, f"their blobs are missing from {outcome.source}"),
                           (outcome.deleted, "they were deleted from the checkout")):
            if paths:
                listed = ", ".join(paths[:_SHOWN_PATHS])
                if len(paths) > _SHOWN_PATHS:
                    listed += f" and {len(paths) - _SHOWN_PATHS} more"
                self.warn(f"warning: {outcome.pin.repo} {outcome.commit[:12]}: {len(paths)} file(s) not checked "
                          f"out into {self.dest / outcome.pin.path}, {why}: {listed} (if the build needs them, "
                          f"fix the source; if not, leave them out with `sparse` in {shown(self.pins.source)})")


def _write_if_changed(path: Path, text: str) -> None:
    """Leave an unchanged file alone, so a Makefile that includes it sees no new mtime."""
    if not path.is_file() or path.read_text(encoding="utf-8") != text:
        write_text(path, text)


def _read_stamp(work: Path) -> dict[str, object]:
    try:
        data = json.loads((work / ".git" / STAMP).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        data = None
    return data if isinstance(data, dict) else {}


def _head(work: Path) -> str:
    """HEAD of the repository whose `.git` is in `work` itself ("" when there is none)."""
    if not (work / ".git").is_dir():  # never ask git here: it would answer for the parent checkout
        return ""
    done = git(work, "rev-parse", "--verify", "-q", "HEAD")
    return done.stdout.strip() if done.returncode == 0 else ""


def _has_commit(work: Path, commit: str) -> bool:
    return git(work, "cat-file", "-e", f"{commit}^{{commit}}").returncode == 0


def _borrow(gitdir: Path, objects: Path | None) -> None:
    """Borrow a local mirror's objects (as git clone --shared); earlier sources that still exist stay."""
    assert objects is not None
    alternates = gitdir / "objects" / "info" / "alternates"
    old = alternates.read_text(encoding="utf-8").splitlines() if alternates.is_file() else []
    keep = [line for line in old if line.strip() and line != str(objects) and Path(line).is_dir()]
    _write_if_changed(alternates, "\n".join([str(objects), *keep]) + "\n")


def _only_missing_blobs(stderr: str) -> bool:
    errors = [line for line in stderr.splitlines() if line.startswith(("error:", "fatal:"))]
    return bool(errors) and all(_MISSING_BLOB.match(line) for line in errors)


def _absent_files(work: Path) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Tracked files (within the sparse patterns) missing from the folder: (blob missing, blob present)."""
    deleted = {p for p in git(work, "ls-files", "-z", "--deleted").stdout.split("\0") if p}
    if not deleted:
        return (), ()
    blobs: dict[str, str] = {}
    for entry in git(work, "ls-files", "-z", "-s").stdout.split("\0"):
        meta, _, path = entry.partition("\t")
        fields = meta.split()
        if path in deleted and len(fields) == 3 and fields[0] != "160000":  # a submodule is not a file
            blobs[path] = fields[1]
    check = git(work, "cat-file", "--batch-check", input_text="".join(s + "\n" for s in blobs.values()))
    missing = {line.split()[0] for line in check.stdout.splitlines() if line.endswith(" missing")}
    return (tuple(sorted(p for p, s in blobs.items() if s in missing)),
            tuple(sorted(p for p, s in blobs.items() if s not in missing)))


def stale_pins(dest: Path, pins: Pins) -> list[str]:
    """What the workspace at `dest` lacks against `pins`, one phrase per pin ([] when every checkout is
    stamped at its pin), from the stamps alone: no git runs, so `hil doctor` answers in a moment.

    Why: a workspace assembled before an upgrade of et-hil holds the old pins' commits; built from,
    it would give numbers of another ExecuTorch than the one the installed package names.
    """
    try:
        summary = json.loads((dest / SUMMARY_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        summary = {}
    bench = bool(summary.get("bench_commits")) if isinstance(summary, dict) else False
    found = []
    for pin in pins.pins:
        stamp, commit = _read_stamp(dest / pin.path), pin.wanted(bench)
        if not stamp:
            found.append(f"{pin.repo} not checked out at {dest / pin.path}")
        elif (stamp.get("repo"), stamp.get("commit"), stamp.get("sparse")) != (pin.repo, commit, list(pin.sparse)):
            found.append(f"{pin.repo} at {str(stamp.get('commit'))[:12]}, pinned {commit[:12]}")
    return found
