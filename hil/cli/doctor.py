"""`hil doctor`: what this machine has and lacks for a board, each missing piece with its fix.

A lab bench fails in dull ways (no device pack, probe unplugged, wrong VCOM, SDK path unset)
that otherwise surface minutes into a run as a cryptic error. The doctor runs every check
in its own daemon thread with a timeout, all at once, so it answers in seconds and never
hangs on a wedged USB device; it prints one line per check and returns non-zero naming each
missing piece.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import os
import sys
import threading
import time
from pathlib import Path
from typing import Callable, TextIO

from hil.config.board_config import BoardConfig
from hil.base.errors import HilError
from hil.cli.doctor_tools import CHECK_TIMEOUT_S, GCC_BANNER, GDB_BANNER, QEMU_BANNER, Check, _answer, _tool

# Seconds the whole doctor may take (well under the 30 s promised to users); one check: CHECK_TIMEOUT_S.
TOTAL_TIMEOUT_S = 20.0

MCULINK_VID, MCULINK_PID = 0x1FC9, 0x0143
README_LAB = 'README, section "Lab bench"'


def check_gdb(cfg: BoardConfig | None) -> Check:
    gdb = cfg.gdb if cfg else "gdb-multiarch"
    return _tool("GDB", gdb, "apt-get install gdb-multiarch (or set [debug].gdb / --hil-gdb)", GDB_BANNER)


def check_pyocd(_cfg: BoardConfig | None) -> Check:
    """Import pyOCD and every part the later checks use, once, before they run in parallel.

    Two threads importing pyOCD's modules at the same time hit its circular imports
    (`_DeadlockError`, seen here), so the import is its own first phase.
    """
    try:
        import pyocd
        import pyocd.target.pack.pack_target  # noqa: F401  (target_support)
        from hil.probe.pyocd_flash import _pyocd_api

        _pyocd_api()
    except ImportError as exc:
        return Check("pyOCD", False, f"cannot import pyocd ({exc})", "pip install pyocd==0.46.0")
    return Check("pyOCD", True, f"pyocd {pyocd.__version__} ({Path(pyocd.__file__).parent})")


def check_target(cfg: BoardConfig) -> Check:
    from hil.probe.pyocd_flash import ProbeSettings, target_support

    target = str(cfg.get("pyocd.target", ""))
    name = f"pyOCD target {target or '(none)'}"
    fix = f"pyocd pack install {target}  (needs the network), or set [pyocd].pack / --hil-pack PATH.pack ({README_LAB})"
    try:
        settings = ProbeSettings.from_config(cfg)
        where = target_support(settings.target, settings.pack)
    except Exception as exc:  # a bad pack path or an unreadable pack is itself the finding
        return Check(name, False, f"{type(exc).__name__}: {exc}", fix)
    if where is None:
        return Check(name, False, "unknown to pyOCD (no built-in target, no installed pack defines it)", fix)
    return Check(name, True, f"known ({where})")


def check_probes(cfg: BoardConfig | None) -> Check:
    from hil.probe.pyocd_flash import is_remote, list_probes, remote_probe

    wanted = str(cfg.get("pyocd.probe_id", "") or "") if cfg else ""
    if is_remote(wanted):  # a probe behind `pyocd server`: ask that server, not the USB bus
        try:
            return Check("debug probes", True, str(remote_probe(wanted, timeout=CHECK_TIMEOUT_S - 2)))
        except HilError as exc:
            return Check("debug probes", False, str(exc), "start `pyocd server` on the probe's host")
    probes = list_probes()
    if cfg is None and not probes:  # a general check-up: no probe is a fact, not a fault
        return Check("debug probes", False, "none connected", required=False)
    listing = ", ".join(str(p) for p in probes)
    fix = f"connect the EVK's MCU-Link USB port; pick one with [pyocd].probe_id or --hil-probe ({README_LAB})"
    if not probes:
        return Check("debug probes", False, "none connected (pyOCD sees no CMSIS-DAP/J-Link/ST-Link probe)", fix)
    if wanted and not any(p.unique_id.lower() == wanted.lower() for p in probes):
        return Check("debug probes", False, f"probe '{wanted}' not connected; connected: {listing}", fix)
    if not wanted and len(probes) > 1:
        return Check("debug probes", False, f"{len(probes)} connected and no probe id set: {listing}", fix)
    return Check("debug probes", True, listing)


def check_serial(cfg: BoardConfig) -> Check:
    from serial.tools import list_ports

    url = str(cfg.get("serial.url", "") or "")
    ports = [p for p in list_ports.comports() if p.vid == MCULINK_VID and p.pid == MCULINK_PID]
    name = f"MCU-Link VCOM ({MCULINK_VID:04X}:{MCULINK_PID:04X})"
    found = ", ".join(f"{p.device} (SER={p.serial_number})" for p in ports)
    if url and not url.startswith("hwgrep://"):
        ok = "://" in url or Path(url).exists()
        return Check(f"serial port {url}", ok, "configured" + (f"; MCU-Link ports: {found}" if found else ""),
                     "check [serial].url / --hil-port")
    if not ports:
        return Check(name, False, "no serial port with that USB VID:PID",
                     f"connect the MCU-Link; or set [serial].url / --hil-port ({README_LAB})")
    return Check(name, True, found)


def check_neutron_sdk(cfg: BoardConfig | None) -> Check:
    spec = importlib.util.find_spec("eiq_neutron_sdk")
    fix = "pip install eiq-neutron-sdk==3.2.0 from NXP's eIQ package index (not on PyPI)"
    if spec is None:
        return Check("eiq_neutron_sdk", False, "not importable (real Neutron AOT unavailable; neutron-sim still works)",
                     fix, required=cfg is not None and cfg.kind == "rt700")
    return Check("eiq_neutron_sdk", True, str(spec.origin))


PATH_CHECKS: list[tuple[str, str, Callable[[Path], str | None]]] = [
    ("MCUX_SDK", "the `mcuxsdk` folder of an MCUXpresso SDK 26.06 workspace for mimxrt700evk",
     lambda p: None if (p / "devices").is_dir() else "no devices/ there"),
    ("EXECUTORCH_ROOT", "ExecuTorch source tree",
     lambda p: None if (p / "CMakeLists.txt").is_file() else "no CMakeLists.txt there"),
    ("NEUTRON_LIB_DIR", "eiq_neutron_sdk/target/imxrt700/rt700/cm33",
     lambda p: next((f"no {lib} there" for lib in ("libNeutronDriver.a", "libNeutronFirmware.a")
                     if not (p / lib).is_file()), None)),
    ("CMSIS_NN", "a checkout of ARM-software/CMSIS-NN (the Cortex-M backend's kernels)",
     lambda p: None if (p / "Include" / "arm_nnfunctions.h").is_file() else "no Include/arm_nnfunctions.h there"),
]


def _path_check(cfg: BoardConfig | None, env: str, what: str, validate: Callable[[Path], str | None]) -> Check:
    """A firmware source path: from the environment, the board file, or the `hil sources` workspace."""
    from hil.firmware.sources_cmd import HINT
    from hil.firmware.workspace import workspace_paths

    value = (os.environ.get(env) or (str(cfg.get(f"paths.{env.lower()}", "") or "") if cfg else "")
             or workspace_paths().get(env, ""))
    fix = (f"{HINT} (the pinned workspace), or export {env}=... or set [paths].{env.lower()} in the "
           f"board file ({what}; {README_LAB})")
    if not value:
        return Check(env, False, "not set", fix)
    path = Path(value).expanduser()
    if not path.is_dir():
        return Check(env, False, f"{path} is not a folder", fix)
    problem = validate(path)
    return Check(env, problem is None, f"{path}" + (f": {problem}" if problem else ""), fix)


def check_armgcc(cfg: BoardConfig | None) -> Check:
    root = os.environ.get("ARMGCC_DIR") or (str(cfg.get("paths.armgcc_dir", "") or "") if cfg else "")
    extra = [Path(root) / "bin"] if root else []
    return _tool("arm-none-eabi-gcc", "arm-none-eabi-gcc",
                 "apt-get install gcc-arm-none-eabi libnewlib-arm-none-eabi, or set ARMGCC_DIR", GCC_BANNER, extra)


def check_qemu(cfg: BoardConfig) -> Check:
    return _tool("QEMU", str(cfg.get("qemu.executable", "qemu-system-arm")), "apt-get install qemu-system-arm",
                 QEMU_BANNER)


def check_lifeline(_cfg: BoardConfig | None) -> Check:
    """How children are tied to the harness (hil.target.spawner): setpriv, or a slower Python stand-in."""
    from hil.target.spawner import find_lifeline

    line = find_lifeline()
    if not line.guard and line.kind != "none":  # hil.target.session_guard's watcher waits on `sleep`
        return Check("setpriv", False, f"{line.detail}, but no `sleep` on PATH: what a child starts (ninja's "
                     "compilers, a model's workers) may outlive a killed harness", "apt-get install coreutils",
                     required=False)
    if line.kind == "setpriv":
        return Check("setpriv", True, f"{line.detail} (children, and what they start, die with the harness)")
    return Check("setpriv", False, f"children die with the harness through {line.detail}",
                 "apt-get install util-linux (it holds setpriv, 2.33 or later)", required=False)


def check_strace(_cfg: BoardConfig | None) -> Check:
    """Whether the export cache can follow reads by native code (hil.aot.native_trace): without, nothing cached."""
    from hil.aot.native_trace import unavailable

    why = unavailable()
    if why is None:
        return Check("strace", True, "follows the files a model's native code reads (safetensors, torch.jit.load)")
    return Check("strace", False, f"{why}: a user's model is exported on every run, never cached",
                 "apt-get install strace", required=False)


def _checks_for(cfg: BoardConfig | None) -> list[tuple[str, Callable[[], Check]]]:
    """The checks that run in parallel after the pyOCD import (see check_pyocd)."""
    checks: list[tuple[str, Callable[[], Check]]] = [
        ("GDB", lambda: check_gdb(cfg)),
        ("arm-none-eabi-gcc", lambda: check_armgcc(cfg)),
        ("setpriv", lambda: check_lifeline(cfg)),
        ("strace", lambda: check_strace(cfg)),
    ]
    if cfg is not None and cfg.kind == "qemu":
        checks.append(("QEMU", lambda: check_qemu(cfg)))
    if cfg is None or cfg.kind == "rt700":
        checks.append(("debug probes", lambda: check_probes(cfg)))
        checks.append(("eiq_neutron_sdk", lambda: check_neutron_sdk(cfg)))
    if cfg is not None and cfg.kind == "rt700":
        checks.insert(1, ("pyOCD target", lambda: check_target(cfg)))
        checks.append(("serial port", lambda: check_serial(cfg)))
        checks += [(env, (lambda e=env, w=what, v=val: _path_check(cfg, e, w, v))) for env, what, val in PATH_CHECKS]
    if cfg is not None:
        from hil.cli.doctor_firmware import firmware_checks

        checks += firmware_checks(cfg)
    return checks


def _run_all(checks: list[tuple[str, Callable[[], Check]]], budget: float) -> list[Check]:
    """Run every check in a daemon thread; a check still running at its deadline is reported as timed out."""
    results: list[Check | None] = [None] * len(checks)

    def runner(i: int, name: str, fn: Callable[[], Check]) -> None:
        try:
            results[i] = fn()
        except Exception as exc:
            results[i] = Check(name, False, f"check failed: {type(exc).__name__}: {exc}")

    threads = [threading.Thread(target=runner, args=(i, n, f), name=f"doctor: {n}", daemon=True)
               for i, (n, f) in enumerate(checks)]
    for thread in threads:
        thread.start()
    deadline = time.monotonic() + min(budget, CHECK_TIMEOUT_S)
    for thread in threads:
        thread.join(max(0.0, deadline - time.monotonic()))
    return [r if r is not None else Check(name, False, f"no answer within {CHECK_TIMEOUT_S:g} s (hung?)")
            for (name, _), r in zip(checks, results)]


def run_doctor(cfg: BoardConfig | None, *, out: TextIO | None = None, as_json: bool = False) -> int:
    """Print the checks for `cfg` (or the board-independent ones for None); 0 when nothing required is missing.

    The board file itself was checked against its schema when it was read, before any check here.
    `as_json` prints one JSON document (board, ok, seconds, checks) instead of the lines.
    """
    out = out or sys.stdout  # looked up now: a caller may have replaced sys.stdout since the import
    start = time.monotonic()
    board = f"board '{cfg.name}' ({cfg.source})" if cfg else "no board (general checks)"
    if not as_json:
        print(f"hil doctor: {board}", file=out)
        if cfg is not None:
            print(f"  {'ok':<8} board file: {cfg.source} (schema checked)", file=out)
    results = _run_all([("pyOCD", lambda: check_pyocd(cfg))], TOTAL_TIMEOUT_S)
    if results[0].ok:
        checks = _checks_for(cfg)
    else:  # without pyOCD the probe and target checks can only repeat the import error
        checks = [c for c in _checks_for(cfg) if c[0] not in ("pyOCD target", "debug probes")]
    results += _run_all(checks, TOTAL_TIMEOUT_S - (time.monotonic() - start))
    missing = [c.name for c in results if not c.ok and c.required]
    took = time.monotonic() - start
    if as_json:
        doc = {"board": cfg.name if cfg else None, "board_file": str(cfg.source) if cfg else None,
               "ok": not missing, "seconds": round(took, 2), "missing": missing,
               "checks": [dataclasses.asdict(c) for c in results]}
        print(json.dumps(doc, indent=2), file=out)
        return 1 if missing else 0
    for check in results:
        print(check.line(), file=out)
    if missing:
        print(f"hil doctor: MISSING {', '.join(missing)} ({took:.1f} s)", file=out)
        return 1
    print(f"hil doctor: all checks passed ({took:.1f} s)", file=out)
    return 0
