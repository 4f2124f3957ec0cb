"""`hil sources`: the firmware's pinned upstream sources, assembled into the harness cache by one command.

Why a `hil` command and not only a Makefile target: a user who installed et-hil from a wheel has no
checkout and no Makefile, yet the QEMU runtime image and the RT700 firmware are built from these
sources. `make sources`, `make rt700-sdk`, `hil run` and the pytest plugin (on demand, when
HIL_GIT_BASE is set and the runtime image is wanted) all call `assemble_sources` here, so every way
in says the same things: progress per repository, and one line naming what could not be had.

Where from: `--git-base`, else `HIL_GIT_BASE` (a local folder of `owner/name` mirrors, or a URL),
else the public host. Where to: `--dest`, else RT700_SDK_DIR, else rt700-sdk in the harness cache
(hil.firmware.workspace.default_dest). Exit status 3 when the sources cannot be had (the machine's
fault: a mirror without a pin, no network), 2 for a `--git-base` or `--pins` of the user's that is
not one.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

from hil.base.errors import BuildError, EnvironmentFault, InputError
from hil.base import commands
from hil.firmware.git_cmd import GitTimeout, WorkspaceError
from hil.firmware.pins import DEFAULT_PINS, Pins, PinsError, load_pins, shown
from hil.firmware.workspace import (DEFAULT_BASE, ENV_FILE, FETCH_TIMEOUT_S, PROBE_TIMEOUT_S, Assembler, Outcome,
                                    Say, find_url, is_url)

COMMAND = "hil sources"
HINT = commands.SOURCES


def sources_folder() -> Path:
    """Where the workspace is made and looked for: RT700_SDK_DIR, else rt700-sdk in the harness cache."""
    from hil.firmware.workspace import default_dest

    return Path(os.environ.get("RT700_SDK_DIR") or default_dest()).expanduser().absolute()


def git_base(flag: str | None = None) -> str:
    """The git base in force: `flag`, else HIL_GIT_BASE, else the public host; a folder made absolute.

    A folder that is not there is the user's error when typed as --git-base (InputError), the
    machine's when the environment names it (EnvironmentFault): a lab mirror that is not mounted."""
    base = flag or os.environ.get("HIL_GIT_BASE") or DEFAULT_BASE
    if is_url(base):
        return base
    folder = Path(base).expanduser()
    if not folder.is_dir():
        where = "--git-base" if flag else "HIL_GIT_BASE"
        fault = InputError if flag else EnvironmentFault
        raise fault(f"git base {base} ({where}) is neither a URL nor a folder, so the pinned firmware sources "
                    "cannot be had from it")
    return str(folder.absolute())


def read_pins(path: Path = DEFAULT_PINS) -> Pins:
    """The pins file; a broken one of the user's (--pins) is an InputError, the package's own an EnvironmentFault."""
    try:
        return load_pins(path)
    except PinsError as exc:
        raise (EnvironmentFault if path == DEFAULT_PINS else InputError)(str(exc)) from None


def assemble_sources(dest: Path, base: str, *, pins: Pins | None = None, bench_commits: bool = False,
                     fetch_timeout: float = FETCH_TIMEOUT_S, say: Say = print, warn: Say | None = None,
                     progress: Callable[[float], None] | None = None) -> list[Outcome]:
    """Check every pin out into `dest` from `base` (see hil.firmware.workspace.Assembler).

    Raises EnvironmentFault, one line: which repository could not be had from where, and why."""
    assembler = Assembler(pins or read_pins(), dest, base, bench_commits, fetch_timeout, say)
    if warn is not None:
        assembler.warn = warn
    if progress is not None:
        assembler.progress = progress
    try:
        return assembler.assemble()
    except (BuildError, OSError) as exc:
        raise EnvironmentFault(f"the pinned firmware sources could not be had from {base}: {exc}") from None


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--dest", type=Path, help="workspace folder (default: $RT700_SDK_DIR, else rt700-sdk in the "
                        "harness cache, $HIL_CACHE_DIR or ${XDG_CACHE_HOME:-~/.cache}/et-hil)")
    parser.add_argument("--git-base", help=f"URL or folder of owner/name repositories (default: $HIL_GIT_BASE, "
                        f"else {DEFAULT_BASE})")
    parser.add_argument("--pins", type=Path, default=DEFAULT_PINS, help="pins file (default: the package's "
                        "firmware/rt700/pins.toml)")
    parser.add_argument("--bench-commits", action="store_true",
                        help="check out each pin's bench_commit (the exact upstream release) where it has one")
    parser.add_argument("--fetch-timeout", type=float, default=FETCH_TIMEOUT_S, metavar="S",
                        help=f"seconds one git fetch or ls-remote may take (default {FETCH_TIMEOUT_S:g})")
    parser.add_argument("--optional", action="store_true",
                        help="for `make demo` / `make test`: without a git base of the user's, a public host that does "
                        "not answer within --probe-timeout (or any failure) is one line and exit 0, not an error")
    parser.add_argument("--probe-timeout", type=float, default=PROBE_TIMEOUT_S, metavar="S",
                        help=f"with --optional: seconds the first repository may take to answer (default {PROBE_TIMEOUT_S:g})")
    parser.add_argument("-q", "--quiet", action="store_true", help="print only warnings and errors")


def run(args: argparse.Namespace) -> int:
    """`hil sources`: assemble, then print the workspace's variables; raises EnvironmentFault (exit 3)."""
    dest = (args.dest.expanduser().absolute() if args.dest else sources_folder())
    if args.optional and not (args.git_base or os.environ.get("HIL_GIT_BASE")):
        return _assemble_if_reachable(args, dest)
    say: Say = (lambda _line: None) if args.quiet else print
    base = git_base(args.git_base)
    pins = read_pins(args.pins)
    kind = "bench commits" if args.bench_commits else "pinned commits"
    say(f"{COMMAND}: {len(pins.pins)} repositories from {base} into {dest} ({kind} of {shown(pins.source)})")
    started = time.monotonic()
    try:
        outcomes = assemble_sources(dest, base, pins=pins, bench_commits=args.bench_commits,
                                    fetch_timeout=args.fetch_timeout, say=say)
    except EnvironmentFault as exc:
        raise EnvironmentFault(f"{exc}; {dest} is left unfinished, and nothing builds from it until a "
                               "`hil sources` completes it") from None
    state = "is up to date" if all(o.up_to_date for o in outcomes) else "is ready"
    say(f"{COMMAND}: workspace {dest} {state} ({len(outcomes)} repositories, {time.monotonic() - started:.1f} s)")
    for name, path in pins.variables(dest):
        say(f"{name}={path}")
    say(f"(also in {dest / ENV_FILE}, for a shell's `.` or a Makefile's `include`)")
    return 0


def _assemble_if_reachable(args: argparse.Namespace, dest: Path) -> int:
    """`--optional` without a git base of the user's: the public host if it answers, else one line, exit 0.

    A finished workspace is only re-checked (no network); an unfinished one is fetched only after
    the first repository answered within --probe-timeout, so a machine without the network never
    waits on it. What is missing is said once, with what the QEMU board does meanwhile and the fix.
    """
    why = ""
    try:
        if not (dest / ENV_FILE).is_file():
            find_url(DEFAULT_BASE, read_pins(args.pins).pins[0].repo, args.probe_timeout)
        run(argparse.Namespace(**{**vars(args), "optional": False, "dest": dest, "git_base": DEFAULT_BASE}))
        return 0
    except (WorkspaceError, GitTimeout, EnvironmentFault, InputError, OSError) as exc:
        why = str(exc)
    print(f"{COMMAND}: the pinned firmware sources could not be had from {DEFAULT_BASE} ({why}); until they are, "
          f"the QEMU board's firmware = \"auto\" runs the replay image. To get them: {HINT}", file=sys.stderr)
    return 0

