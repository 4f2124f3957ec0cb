"""The one path every run follows: model -> AOT -> image -> board -> ETDump -> profile, with artifacts.

Each stage lives in its own module; this one only wires them in order, times them, and makes sure a
run folder always ends with a manifest describing what it holds, whether the run passed or failed.
"""

from __future__ import annotations

import shutil
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hil import atomic
from hil.analysis.console import parse_console
from hil.analysis.profile import TimeScale, build_profile
from hil.aot.export import CompiledModel, export_model
from hil.boards import open_board
from hil.boards.base import RunCapture, RunPlan
from hil.config import BoardConfig
from hil.errors import BoardConfigError, HilError
from hil.firmware.elf_model import check_image_carries
from hil.manifest import sha256_file, write_manifest
from hil.regress.stats import drop_warmup
from hil.steps import StepTimer

DEFAULT_ITERATIONS = 5
# What a run writes into its folder; a new run in the same folder starts by removing these, so
# logs that are appended to (serial.log, mi.log) never mix two runs. Nothing else is touched.
RUN_FILES = (
    "model.pte", "etrecord.bin", "trace.etdump", "serial.log", "mi.log", "qemu.log", "profile.json",
    "simulation.json", "neutron_convert.log", "manifest.json", "error.txt", "trace.json",
)


@dataclass
class RunRequest:
    """What to profile, where, and how: everything the CLI and the pytest plugin can set."""

    model: str
    board: BoardConfig
    out_dir: Path
    iterations: int = DEFAULT_ITERATIONS
    warmup: int = 0
    timeout_s: float | None = None
    delegate: str | None = None
    seed: int = 0
    jitter: float | None = None
    image_options: dict[str, Any] = field(default_factory=dict)


@dataclass
class RunResult:
    out_dir: Path
    profile: dict[str, Any]
    compiled: CompiledModel
    capture: RunCapture
    steps_s: dict[str, float]
    simulation: dict[str, Any] | None = None

    @property
    def profile_path(self) -> Path:
        return self.out_dir / "profile.json"


def choose_delegate(request: RunRequest, report: Callable[[str], None] | None = None) -> str:
    """The request wins; otherwise the board file's `[aot].delegate`; otherwise a CPU-only program.

    "auto" takes the real Neutron backend when the eIQ Neutron SDK imports, and otherwise says so in
    one line and takes the simulated one.
    """
    delegate = request.delegate or str(request.board.get("aot.delegate", "none"))
    if delegate != "auto":
        return delegate
    from hil.aot.neutron_sdk import sdk_available, sdk_reason

    if sdk_available():
        return "neutron"
    (report or print)(f"[hil] {sdk_reason()}; using the simulated Neutron backend")
    return "neutron-sim"


def _prepare_image(
    request: RunRequest, compiled: CompiledModel, delegate: str, plan: RunPlan, timer: StepTimer
) -> tuple[Path, TimeScale, dict | None]:
    """The ELF to flash, how to read the ETDump's ticks, and the simulation's ground truth if any.

    The QEMU replay data is synthesised for exactly `plan.runs` inferences (the image refuses any
    other count); an RT700 image runs whatever count the handshake gives it.
    """
    cfg = request.board
    if cfg.kind == "qemu":
        from hil.buffers.simulated import simulated_buffer
        from hil.firmware.qemu_image import build_qemu_image

        jitter = request.jitter if request.jitter is not None else float(cfg.get("simulation.jitter", 0.0))
        with timer.step("simulate_etdump"):
            buffer = simulated_buffer(
                compiled, iterations=plan.runs, clock_mhz=cfg.clock_mhz, seed=request.seed, jitter=jitter,
                npu_clock_mhz=cfg.get("simulation.npu_clock_mhz"),
            )
        with timer.step("build_image"):
            image = build_qemu_image(buffer.etdump, buffer.console_lines, runs=plan.runs, **request.image_options)
        return image, buffer.time_scale, buffer.simulation
    if cfg.kind == "rt700":
        # `{model}` and `{delegate}` let one board file serve a suite with an image per program.
        elf = Path(str(cfg.require("firmware.elf")).format(model=compiled.name, delegate=delegate))
        if not elf.is_absolute() and cfg.source is not None:
            elf = (cfg.source.parent.parent / elf).resolve()
        if not elf.is_file():
            raise BoardConfigError(
                f"board '{cfg.name}': firmware image {elf} not found; build it with "
                f"`make firmware BOARD=rt700 MODEL={request.out_dir / 'model.pte'} RT700_BUILD={elf.parent}`"
                " or pass --elf"
            )
        check_image_carries(elf, request.out_dir / "model.pte", board=cfg.name)
        return elf, TimeScale.core_cycles(cfg.clock_mhz), None
    raise BoardConfigError(f"board '{cfg.name}' ({cfg.source}): unknown kind '{cfg.kind}'")


def run_profile(request: RunRequest, report: Callable[[str], None] | None = None) -> RunResult:
    """Profile one model on one board; artifacts land in `request.out_dir` even when a step fails."""
    out = Path(request.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    for name in RUN_FILES:
        (out / name).unlink(missing_ok=True)
    timer = StepTimer(report)
    provenance: dict[str, Any] = {
        "model": request.model,
        "board": request.board.name,
        "board_file": str(request.board.source) if request.board.source else None,
        "board_file_sha256": sha256_file(request.board.source) if request.board.source else None,
        "iterations": request.iterations,
        "warmup": request.warmup,
        "status": "failed",
    }
    try:
        plan = RunPlan(request.iterations, request.warmup)  # a bad count fails here, before any work
        delegate = choose_delegate(request, report)
        with timer.step("aot"):
            compiled = export_model(request.model, delegate=delegate)
        provenance.update(aot_cache_key=compiled.cache_key, aot_cached=compiled.cached, delegate=delegate,
                          model_name=compiled.name)
        shutil.copyfile(compiled.pte_path, out / "model.pte")
        shutil.copyfile(compiled.etrecord_path, out / "etrecord.bin")
        if compiled.extra.get("conversion_log"):
            atomic.write_text(out / "neutron_convert.log", compiled.extra["conversion_log"])
        image, time_scale, simulation = _prepare_image(request, compiled, delegate, plan, timer)
        provenance["time_scale"] = time_scale.to_dict()  # how `hil inspect RUN_DIR` reads the ticks again
        provenance["firmware_sha256"] = sha256_file(image)
        provenance["firmware"] = str(image)
        if simulation is not None:
            atomic.write_json(out / "simulation.json", simulation)
        capture = _run_on_board(request, image, plan, timer)
        console = parse_console(capture.console)
        with timer.step("analyse"):
            profile = build_profile(
                out / "trace.etdump",
                out / "etrecord.bin",
                board=request.board.name,
                model=compiled.name,
                simulated=request.board.kind != "rt700",
                time_scale=time_scale,
                console=console,
                pte_path=out / "model.pte",
            )
        profile["delegate"] = delegate
        if request.warmup:  # build_profile already summarised every event
            profile = drop_warmup(profile, request.warmup)
        profile["harness_steps_s"] = {**timer.seconds, **capture.steps_s}
        atomic.write_json(out / "profile.json", profile)
        provenance["status"] = "passed"
        return RunResult(out, profile, compiled, capture, dict(timer.seconds), simulation)
    except HilError as exc:
        provenance["error"] = str(exc)
        raise
    except Exception as exc:
        provenance["error"] = f"{type(exc).__name__}: {exc}"
        atomic.write_text(out / "error.txt", traceback.format_exc())
        raise
    finally:
        provenance["steps_s"] = dict(timer.seconds)
        write_manifest(out, provenance)


def _run_on_board(request: RunRequest, image: Path, plan: RunPlan, timer: StepTimer) -> RunCapture:
    """Flash and run `plan`, always closing the board; the board writes serial.log and trace.etdump into out_dir."""
    cfg = request.board
    timeout = request.timeout_s or float(cfg.get("debug.timeout_s", 120))
    board = open_board(cfg, request.out_dir)
    try:
        with timer.step("flash"):
            board.flash(image)
        with timer.step("run"):
            capture = board.run(timeout, plan)
    finally:
        board.close()
    trace = request.out_dir / "trace.etdump"
    if not trace.is_file():
        atomic.write_bytes(trace, capture.etdump)
    return capture
