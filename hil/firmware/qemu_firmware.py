"""Which image the QEMU board runs: the real firmware (runtime) or a host-made ETDump (replay).

The choice, `runtime`, `replay` or `auto`: the board file's `[qemu].firmware`, unless a run names it
(`hil run --firmware`, `pytest --hil-firmware`, `HIL_FIRMWARE`, ini `hil_firmware`: hil.config.options and
hil.plugin.settings write it over the board file's, and the board remembers where it came from):

- "runtime": the shared application with ExecuTorch's runtime, built for the emulated Cortex-M33
  from the pinned source workspace (`hil sources`): the program really runs, and its times are
  the emulated core's instruction counts (see TIME_BASE);
- "replay": the replay image, which hands out an ETDump made beforehand (the host runtime's, or
  the simulated Neutron buffer); it also serves the harness's tests that need a crafted ETDump;
- "auto" (the default): runtime when the workspace is there and the program is one the runtime
  image runs (CPU-only: portable kernels), else replay with a one-line notice saying why.

A caller may also *require* a kind (`Requirement`: a nightly whose history is a runtime series):
then, as with "runtime" chosen, a run that cannot have it is an error naming the missing part,
never a replay with a warning. With HIL_GIT_BASE set, a run that wants the runtime image and finds
no workspace (or one at other pins) assembles it from there first (`QemuFirmware.assemble_from`:
hil.run.image does it, as `hil sources` would). Without, a missing workspace is the machine's fault
(EnvironmentFault, exit 3);
a program the runtime image cannot run, or two choices that contradict, the user's (exit 2).
With a workspace present (or HIL_GIT_BASE set), a runtime build failure is an error, never a quiet
replay: the user asked for sources, so a broken build must show.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from hil.config.board_schema import FIRMWARE_CHOICES
from hil.config.board_config import BoardConfig
from hil.base.errors import EnvironmentFault, InputError

FirmwareKind = Literal["runtime", "replay"]
SETTING = "qemu.firmware"
CHOICES = FIRMWARE_CHOICES
# Delegates whose programs the runtime image runs: portable kernels, et-hil's simulated Neutron
# backend (firmware/qemu/runtime/neutron_sim_backend.cpp), and the Cortex-M backend's CMSIS-NN operators.
RUNTIME_DELEGATES = ("none", "neutron-sim", "cortex-m")
# Of those, the ones only the runtime image runs: the host runtime that makes the replay image's ETDump has
# no cortex_m kernels (it fails such a program with error 0x14, operator missing).
RUNTIME_ONLY_DELEGATES = ("cortex-m",)
# The PAL ticks of the runtime image: mps2-an505's FPGAIO counter at its 20 MHz reference clock
# (firmware/qemu/runtime/board_glue.c), which the console's `Core/NPU Frequency` line also says.
RUNTIME_TICK_MHZ = 20.0
RUNTIME_TICK_NS = 1000.0 / RUNTIME_TICK_MHZ


@dataclass(frozen=True)
class QemuFirmware:
    """The image kind chosen for one run, the workspace it builds from, and what to tell the user.

    A runtime choice without a workspace yet has `assemble_from`: the git base (HIL_GIT_BASE) to
    assemble `workspace` from before the build."""

    kind: FirmwareKind
    workspace: Path | None = None
    notice: str | None = None
    assemble_from: str | None = None


@dataclass(frozen=True)
class Requirement:
    """An image kind a run must have, and why (the error says it): e.g.
    `Requirement("runtime", "the history's series of cifar10 on qemu is a runtime series")`."""

    kind: FirmwareKind
    reason: str


def workspace_folder() -> Path:
    """Where the pinned source workspace is looked for: RT700_SDK_DIR, else `hil sources`'s default."""
    from hil.firmware.sources_cmd import sources_folder

    return sources_folder()


def find_workspace() -> Path | None:
    """The pinned source workspace (`workspace_folder`), or None while it is missing or unfinished."""
    from hil.firmware.workspace import ENV_FILE

    folder = workspace_folder()
    return folder if (folder / ENV_FILE).is_file() else None


def _stale(workspace: Path) -> str:
    """What the workspace lacks against the package's pins, from its stamps ("" when at them)."""
    from hil.firmware.sources_cmd import read_pins
    from hil.firmware.workspace import stale_pins

    return "; ".join(stale_pins(workspace, read_pins()))


def wanted(cfg: BoardConfig) -> str:
    """The choice in force (one of CHOICES: the schema checked the file and the overrides alike)."""
    return str(cfg.get(SETTING, "auto"))


def _stated(cfg: BoardConfig) -> str:
    return f'{SETTING} = "{wanted(cfg)}" ({cfg.origin(SETTING)})'


def choose_qemu_firmware(cfg: BoardConfig, delegate: str, *, crafted: bool = False,
                         required: Requirement | None = None) -> QemuFirmware:
    """The image for a program lowered with `delegate`; `crafted`: the run asks for a replay variant;
    `required`: the kind the run must have (see the module docstring), or None."""
    choice = wanted(cfg)
    if required is not None and choice not in ("auto", required.kind):
        raise InputError(f"board '{cfg.name}': {_stated(cfg)}, but the run requires the {required.kind} image "
                         f"({required.reason})")
    need = required.kind if required is not None else (choice if choice != "auto" else None)
    # Who wants the runtime image, in words that end with it: the errors below go on from there.
    asked = (f"the run requires the runtime image ({required.reason})" if required is not None
             else f"{_stated(cfg)} asks for the runtime image")
    if delegate in RUNTIME_ONLY_DELEGATES and (need == "replay" or crafted):
        raise InputError(f"board '{cfg.name}': a program lowered with the '{delegate}' delegate runs on the runtime "
                         f"image only (the replay image's host runtime has no {delegate} kernels), but "
                         f"{_stated(cfg) if need == 'replay' else 'this run asks for a crafted replay image'}")
    if delegate in RUNTIME_ONLY_DELEGATES and need is None:
        need, asked = "runtime", f"a program lowered with the '{delegate}' delegate needs the runtime image"
    if need == "replay" or (need is None and crafted):
        return QemuFirmware("replay")
    if crafted:
        raise InputError(f"board '{cfg.name}': this run asks for a crafted replay image, but {asked}")
    if delegate not in RUNTIME_DELEGATES:
        if need == "runtime":
            raise InputError(f"board '{cfg.name}': {asked}, which cannot run a "
                             f"program lowered with the '{delegate}' delegate (it runs: {', '.join(RUNTIME_DELEGATES)});"
                             f" use --delegate {' or '.join(RUNTIME_DELEGATES)}")
        return QemuFirmware("replay", notice=f"a program with the '{delegate}' delegate runs on the replay image "
                                             "(the runtime image has no such backend)")
    from hil.firmware.sources_cmd import HINT

    workspace = find_workspace()
    if workspace is not None:
        stale = _stale(workspace)
        if stale and os.environ.get("HIL_GIT_BASE"):  # brought to the pins first, as `hil sources` would
            return QemuFirmware("runtime", workspace, assemble_from=os.environ["HIL_GIT_BASE"])
        notice = (f"the firmware source workspace {workspace} is not at the installed pins ({stale}): the runtime "
                  f"image is built from the commits it holds; {HINT} brings it to them") if stale else None
        return QemuFirmware("runtime", workspace, notice=notice)

    if os.environ.get("HIL_GIT_BASE"):  # the user named where the sources come from: get them (hil.run.image)
        return QemuFirmware("runtime", workspace_folder(), assemble_from=os.environ["HIL_GIT_BASE"])
    missing = f"no firmware source workspace at {workspace_folder()} (RT700_SDK_DIR)"
    if need == "runtime":
        raise EnvironmentFault(f"board '{cfg.name}': {asked}, but there is {missing}, so nothing runs; "
                               f"assemble it with {HINT}")
    return QemuFirmware("replay", notice=f"{missing}, so this run uses the replay image (a host-made ETDump); to "
                                         f"run the firmware: {HINT}")


def choice_record(cfg: BoardConfig, required: Requirement | None = None) -> dict[str, Any]:
    """What a QEMU run's manifest says of the choice (`firmware_choice`): the setting, where it came from,
    and the requirement the run had, if any."""
    return {"setting": wanted(cfg), "from": cfg.origin(SETTING),
            "required": None if required is None else {"kind": required.kind, "reason": required.reason}}


def check_elf_kind(cfg: BoardConfig, elf: Path, kind: FirmwareKind, required: Requirement | None = None) -> None:
    """A user's ELF (`--elf`) is the image it is: refused when the run's choice or requirement wants the other."""
    choice = wanted(cfg)
    if required is not None and required.kind != kind:
        raise InputError(f"board '{cfg.name}': firmware {elf} is a {kind} image, but the run requires the "
                         f"{required.kind} image ({required.reason})")
    if choice not in ("auto", kind):
        raise InputError(f"board '{cfg.name}': firmware {elf} is a {kind} image, but {_stated(cfg)}")


def would_run_runtime(cfg: BoardConfig) -> bool:
    """Whether `hil run` on this QEMU board file runs the runtime image now (for a CPU-only or a
    simulated-Neutron program alike): how `hil inspect --board-config` reads a bare dump's ticks."""
    choice = wanted(cfg)
    return choice == "runtime" or (choice == "auto" and (find_workspace() is not None
                                                         or bool(os.environ.get("HIL_GIT_BASE"))))


def replay_reason(cfg: BoardConfig) -> str | None:
    """None when runs on this QEMU board execute the runtime image (`would_run_runtime`), else why they replay:
    what `@pytest.mark.hil_requires("runtime")` skips with (hil.config.capabilities)."""
    if would_run_runtime(cfg):
        return None
    if wanted(cfg) == "replay":
        return f"its runs replay a host-made ETDump: {_stated(cfg)}"
    from hil.firmware.sources_cmd import HINT

    return (f"its runs replay a host-made ETDump: no firmware source workspace at {workspace_folder()} "
            f"(RT700_SDK_DIR); assemble it with {HINT}")


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

