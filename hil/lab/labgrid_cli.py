"""labgrid's command-line client, run from its own venv, with a timeout on every call.

labgrid needs `pyserial-labgrid`, a fork that installs the same `serial` package as the harness's
pinned `pyserial==3.5`; in one venv the two overwrite each other's files. So labgrid lives in a venv of
its own (`make lab-venv` creates `.venv-lab` with `labgrid==26.0.1`), and the harness talks to the
coordinator only through `labgrid-client` child processes and parses what they print (`show`,
`reserve --shell`, `wait`, `reservations`; checked against labgrid 26.0's client). Each call is a
`subprocess.run` with a timeout, which kills the client when the timeout passes or the harness is
interrupted: no client outlives the call.

Every call carries the harness's labgrid identity: labgrid names a holder `HOST/USER`, and the
harness's USER is `<login>.hil<pid>` (LG_USERNAME), so two sessions of one user on one host (two
pytest-xdist workers, two CI jobs) are two holders, and a holder whose process is gone is recognisable.
"""

from __future__ import annotations

import ast
import getpass
import os
import re
import socket
import subprocess
import textwrap
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hil.base.errors import BoardConfigError, HilError, TimeoutExpired
from hil.base.paths import REPO_ROOT

LAB_VENV_BIN = REPO_ROOT / ".venv-lab" / "bin"
LABGRID_PIN = "labgrid==26.0.1"  # the Makefile's LABGRID_PIN: the release the lab tests run against
# Seconds one labgrid-client call may take (the coordinator answers in milliseconds on a healthy lab).
CALL_TIMEOUT_S = 30.0
HOLDER_RE = re.compile(r"^(?P<host>[^/]+)/(?P<user>.+)\.hil(?P<pid>\d+)$")


class LabError(HilError):
    """The labgrid coordinator refused a request, or a place lacks what the harness needs."""


def labgrid_bin(tool: str) -> Path:
    """`labgrid-client`, `-coordinator` or `-exporter` from `$HIL_LABGRID_BIN` or the repository's `.venv-lab`."""
    folder = Path(os.environ.get("HIL_LABGRID_BIN") or LAB_VENV_BIN)
    path = folder / tool
    if not path.is_file():
        raise BoardConfigError(f"{tool} not found in {folder}: {install_hint()}")
    return path


def install_hint() -> str:
    """How to get labgrid's commands, in words the user's install has: a checkout has `make lab-venv`,
    a wheel install has only pip (labgrid needs its own venv: its pyserial fork installs the same `serial`
    package as the harness's pinned pyserial)."""
    own_venv = (f"`python3 -m venv DIR && DIR/bin/pip install {LABGRID_PIN}` (a venv apart from the harness's: "
                f"labgrid's pyserial fork replaces pyserial), then export HIL_LABGRID_BIN=DIR/bin")
    if (REPO_ROOT / "Makefile").is_file() and (REPO_ROOT / "pyproject.toml").is_file():
        return f"run `make lab-venv` (creates {LAB_VENV_BIN.parent}), or {own_venv}"
    return own_venv


def session_user(pid: int | None = None) -> str:
    """This process's labgrid USER: the login name plus `.hil<pid>` (see the module docstring)."""
    return f"{getpass.getuser()}.hil{os.getpid() if pid is None else pid}"


def holder_pid(holder: str | None, hostname: str | None = None) -> int | None:
    """The pid of a harness session holding a place from this host (`HOST/USER.hilPID`), else None."""
    match = HOLDER_RE.match(holder or "")
    if match is None or match["host"] != (hostname or lab_hostname()):
        return None
    return int(match["pid"])


def lab_hostname() -> str:
    """The HOST part labgrid gives this machine's holders (LG_HOSTNAME wins, as in labgrid's client)."""
    return os.environ.get("LG_HOSTNAME") or socket.gethostname()


@dataclass(frozen=True)
class Resource:
    """One resource a place matches: where it is exported and labgrid's parameters for it."""

    exporter: str
    group: str
    cls: str
    name: str
    params: dict[str, Any]


@dataclass
class PlaceState:
    """What `labgrid-client -p NAME show` says about a place."""

    name: str
    acquired: str | None = None
    reservation: str | None = None
    resources: list[Resource] = field(default_factory=list)


@dataclass(frozen=True)
class ReservationInfo:
    token: str
    owner: str
    state: str
    allocations: tuple[str, ...] = ()


_RESOURCE_HEAD = re.compile(r"^(?:Acquired|Matching) resource '(?P<name>[^']*)' \((?P<path>[^)]*)\):$")


def parse_show(text: str, place: str) -> PlaceState:
    """Parse `show`: the place's fields, then each resource as a header line and an indented dict."""
    state = PlaceState(place)
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        key, _, value = line.strip().partition(": ")
        if line.startswith("  ") and key == "acquired":
            state.acquired = None if value == "None" else value
        elif line.startswith("  ") and key == "reservation":
            state.reservation = value or None
        head = _RESOURCE_HEAD.match(line)
        if head:
            body = []
            while i + 1 < len(lines) and lines[i + 1].startswith("  "):
                i += 1
                body.append(lines[i])
            exporter, group, cls, name = head["path"].split("/", 3)
            data = ast.literal_eval(textwrap.dedent("\n".join(body)))
            state.resources.append(Resource(exporter, group, cls, head["name"] or name, dict(data.get("params", {}))))
        i += 1
    return state


def parse_reservations(text: str) -> list[ReservationInfo]:
    """Parse `reservations` (or `wait`): `Reservation 'TOKEN':` blocks of `key: value` lines."""
    found: list[ReservationInfo] = []
    blocks = re.split(r"^Reservation '([^']+)':\s*$", text, flags=re.MULTILINE)
    for token, body in zip(blocks[1::2], blocks[2::2]):
        fields = dict(re.findall(r"^\s+(owner|state): (.*)$", body, flags=re.MULTILINE))
        places = re.findall(r"^\s+allocations:\n\s+main: (.*)$", body, flags=re.MULTILINE)
        allocations = tuple(p.strip() for p in ", ".join(places).split(",") if p.strip())
        found.append(ReservationInfo(token, fields.get("owner", ""), fields.get("state", ""), allocations))
    return found


def wait_states(text: str) -> list[str]:
    """The reservation states `labgrid-client wait` printed, one per poll, oldest first."""
    return re.findall(r"^\s*state: (\w+)$", text, flags=re.MULTILINE)


class LabgridClient:
    """`labgrid-client -x COORDINATOR ...` as this session's labgrid identity."""

    def __init__(self, coordinator: str, *, user: str | None = None, timeout: float = CALL_TIMEOUT_S) -> None:
        self.coordinator = coordinator
        self.user = user or session_user()
        self.timeout = timeout
        self.identity = f"{lab_hostname()}/{self.user}"

    def run(self, *args: str, token: str | None = None, timeout: float | None = None,
            check: bool = True) -> subprocess.CompletedProcess[str]:
        """One client call; LabError with labgrid's own message when it fails and `check` is set."""
        env = {**os.environ, "LG_COORDINATOR": self.coordinator, "LG_USERNAME": self.user}
        env.pop("LG_PLACE", None)
        env.pop("LG_TOKEN", None)
        if token:
            env["LG_TOKEN"] = token
        argv = [str(labgrid_bin("labgrid-client")), "-x", self.coordinator, *args]
        limit = self.timeout if timeout is None else timeout
        try:
            done = subprocess.run(argv, capture_output=True, text=True, timeout=limit, env=env,
                                  stdin=subprocess.DEVNULL, check=False)
        except subprocess.TimeoutExpired as exc:
            raise TimeoutExpired(
                f"labgrid-client {' '.join(args)}: no answer from the coordinator {self.coordinator} in {limit:g} s"
            ) from exc
        if check and done.returncode != 0:
            message = (done.stderr.strip() or done.stdout.strip()).splitlines()
            raise LabError(f"labgrid-client {' '.join(args)} (coordinator {self.coordinator}): "
                           f"{message[-1] if message else f'exit status {done.returncode}'}")
        return done

    def show(self, place: str) -> PlaceState:
        return parse_show(self.run("-p", place, "show").stdout, place)

    def reservations(self) -> list[ReservationInfo]:
        return parse_reservations(self.run("reservations").stdout)

    def reserve(self, place: str) -> str:
        """A reservation for exactly `place` (labgrid's `name=` filter); returns its token."""
        out = self.run("reserve", "--shell", f"name={place}").stdout
        match = re.search(r"LG_TOKEN=(\S+)", out)
        if match is None:
            raise LabError(f"labgrid-client reserve name={place}: no token in its answer {out.strip()!r}")
        return match.group(1)

    def wait(self, token: str, timeout: float) -> str | None:
        """Poll the reservation (which also keeps it from expiring) for up to `timeout` s; its last state."""
        try:
            out = self.run("wait", token, timeout=timeout, check=False).stdout
        except TimeoutExpired as exc:
            partial = exc.__cause__.stdout if isinstance(exc.__cause__, subprocess.TimeoutExpired) else None
            text = partial.decode(errors="replace") if isinstance(partial, bytes) else (partial or "")
            states = wait_states(text)
            return states[-1] if states else None
        states = wait_states(out)
        return states[-1] if states else None

    def acquire(self, token: str) -> None:
        """Acquire the place our reservation was allocated (`-p +` with LG_TOKEN)."""
        self.run("-p", "+", "acquire", token=token)

    def release(self, place: str) -> None:
        self.run("-p", place, "release")

    def release_from(self, place: str, holder: str) -> None:
        """labgrid's atomic release: only if `holder` still holds it."""
        self.run("-p", place, "release-from", holder)

    def cancel(self, token: str) -> None:
        self.run("cancel-reservation", token)
