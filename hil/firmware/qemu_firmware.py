"""Which image the QEMU board runs: the real firmware (runtime) or a host-made ETDump (replay).

`[qemu].firmware` in the board file:

- "runtime": the shared application with ExecuTorch's runtime, built for the emulated Cortex-M33
  from the pinned source workspace (`make rt700-sdk`): the program really runs, and its times are
  the emulated core's instruction counts (see TIME_BASE);
- "replay": the replay image, which hands out an ETDump made beforehand (the host runtime's, or
  the simulated Neutron buffer); it also serves the harness's tests that need a crafted ETDump;
- "auto" (the default): runtime when the workspace is there and the program is one the runtime
  image runs (CPU-only: portable kernels), else replay with a one-line notice saying why.

With a workspace present (or HIL_GIT_BASE set), a runtime build failure is an error, never a quiet
replay: the user asked for sources, so a broken build must show.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from hil.config import BoardConfig
from hil.errors import BoardConfigError

FirmwareKind = Literal["runtime", "replay"]
SETTING = "qemu.firmware"
CHOICES = ("runtime", "replay", "auto")
# Delegates whose programs the runtime image runs: portable kernels, and et-hil's simulated Neutron
# backend (firmware/qemu/runtime/neutron_sim_backend.cpp).
RUNTIME_DELEGATES = ("none", "neutron-sim")
# The PAL ticks of the runtime image: mps2-an505's FPGAIO counter at its 20 MHz reference clock
# (firmware/qemu/runtime/board_glue.c), which the console's `Core/NPU Frequency` line also says.
RUNTIME_TICK_MHZ = 20.0
RUNTIME_TICK_NS = 1000.0 / RUNTIME_TICK_MHZ
WORKSPACE_HINT = "`make rt700-sdk` (offline: HIL_GIT_BASE=<mirror> make rt700-sdk)"


@dataclass(frozen=True)
class QemuFirmware:
    """The image kind chosen for one run, the workspace it builds from, and what to tell the user."""

    kind: FirmwareKind
    workspace: Path | None = None
    notice: str | None = None


def find_workspace() -> Path | None:
    """The pinned source workspace: RT700_SDK_DIR, else `make rt700-sdk`'s default; None if unfinished."""
    from hil.firmware.workspace import ENV_FILE, default_dest

    folder = Path(os.environ.get("RT700_SDK_DIR") or default_dest())
    return folder if (folder / ENV_FILE).is_file() else None


def choose_qemu_firmware(cfg: BoardConfig, delegate: str, *, crafted: bool = False) -> QemuFirmware:
    """The image for a program lowered with `delegate`; `crafted`: the run asks for a replay variant."""
    wanted = cfg.get(SETTING, "auto")  # one of CHOICES: the board file's schema checked it (hil.board_schema)
    if wanted == "replay" or crafted:
        return QemuFirmware("replay")
    workspace = find_workspace()
    if delegate not in RUNTIME_DELEGATES:
        why = f"a program with the '{delegate}' delegate runs on the replay image (the runtime image has no such backend)"
        if wanted == "runtime":
            raise BoardConfigError(f"board '{cfg.name}': {SETTING} = \"runtime\", but {why}; use --delegate none")
        return QemuFirmware("replay", notice=why)
    if workspace is None:
        why = f"no firmware source workspace, so the QEMU board replays a host-made ETDump; to run the firmware: {WORKSPACE_HINT}"
        if wanted == "runtime" or os.environ.get("HIL_GIT_BASE"):
            raise BoardConfigError(f"board '{cfg.name}': {why}")
        return QemuFirmware("replay", notice=why)
    return QemuFirmware("runtime", workspace)


def would_run_runtime(cfg: BoardConfig) -> bool:
    """Whether `hil run` on this QEMU board file runs the runtime image now (for a CPU-only or a
    simulated-Neutron program alike): how `hil inspect --board-config` reads a bare dump's ticks."""
    wanted = cfg.get(SETTING, "auto")
    return wanted == "runtime" or (wanted == "auto" and find_workspace() is not None)


def runtime_time_scale(cfg: BoardConfig) -> "TimeScale":
    """The runtime image's ticks: its 20 MHz PAL counter, and the simulated NPU's timer for Neutron events."""
    from hil.analysis.timescale import TimeScale

    return TimeScale.core_cycles(RUNTIME_TICK_MHZ, float(cfg.get("simulation.npu_clock_mhz") or RUNTIME_TICK_MHZ))


def annotations(cfg: BoardConfig, kind: str, simulation: dict[str, Any] | None) -> dict[str, Any]:
    """What a QEMU run's profile says beside its events (and its manifest keeps for `hil inspect`):
    which image ran, what its numbers are, and whether delegated outputs were computed."""
    found: dict[str, Any] = {"firmware": kind, "time_base": time_base(cfg, "runtime" if kind == "runtime" else "replay")}
    if kind == "runtime" and simulation is not None:
        found["delegated_outputs"] = simulation["note"]
    return found


def time_base(cfg: BoardConfig, kind: FirmwareKind) -> dict[str, Any]:
    """What the QEMU board's numbers are, for profile.json and the table's header."""
    if kind == "replay":
        return {"kind": "replayed", "note": "an ETDump made on the host (CPU-only: the host runtime's nanoseconds; "
                                            "simulated Neutron: the cost model's ticks), handed out by the replay image"}
    from hil.boards.qemu import icount_shift

    shift = icount_shift(cfg)
    base: dict[str, Any] = {"kind": "emulated instructions", "tick_mhz": RUNTIME_TICK_MHZ, "icount_shift": shift}
    if shift is None:
        base["note"] = "QEMU without -icount: virtual time follows the host's clock, so times vary from run to run"
        return base
    ns = 2 ** shift
    base.update(ns_per_instruction=ns, instructions_per_us=1000 / ns, instructions_per_tick=RUNTIME_TICK_NS / ns,
                note=(f"instruction counts of the emulated Cortex-M33 (QEMU -icount shift={shift}: {ns} ns of virtual "
                      f"time per instruction, so 1 us = {1000 / ns:g} instructions); no caches, wait states or "
                      "pipeline: right for regressions and relative cost, not for RT700 latency"))
    return base

