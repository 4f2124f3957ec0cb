"""The one path every run follows: model -> AOT -> image -> board -> ETDump -> profile, with artifacts.

Each stage lives in its own module; this one only wires them in order, times them, and makes sure a
run folder always ends with a manifest describing what it holds, whether the run passed or failed.
"""

from __future__ import annotations

import sys
import traceback
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from hil.base import atomic, log, native_log
from hil.config import inputs
from hil.run import out_folder
from hil.records.console import parse_console
from hil.analysis.code_size import footprint_sections
from hil.analysis.profile import TimeScale, build_profile
from hil.aot.export import CompiledModel, is_cached
from hil.aot.isolated import export_isolated
from hil.aot.references import References
from hil.aot.references_run import references_for
from hil.boards import open_board
from hil.boards.base import RunCapture
from hil.records.profile_model import Profile
from hil.base.errors import HilError, InputError, WriteError
from hil.firmware.qemu_firmware import choice_record
from hil.records.manifest import is_simulated, sha256_file
from hil.numerics.check import (SIM_NPU_REASON, RunInputs, numerics_section, skip_reason, wants_references,
                                 write_outputs)
from hil.base.progress import Progress, Within
from hil.run.folder import RUN_FILES, RunFolder, board_provenance, finish_profile
from hil.run.image import prepare_image
from hil.run.request import CheckedRequest, RunRequest, check_request
from hil.base.steps import StepTimer


@dataclass
class RunResult:
    out_dir: Path
    profile: Profile  # a read-only mapping of profile.json too: run.profile["totals_us"]["method_execute"]
    compiled: CompiledModel
    capture: RunCapture
    steps_s: dict[str, float]
    simulation: dict[str, Any] | None = None

    @property
    def profile_path(self) -> Path:
        return self.out_dir / "profile.json"


def _run_inputs(request: RunRequest, compiled: CompiledModel, pte: Path) -> RunInputs | None:
    """The inputs the target gets (the user's file, else the example inputs), checked against the program; None
    with the numerics check off (the image keeps its fill byte)."""
    if not request.numerics:
        return None
    from hil.aot.export import load_inputs
    from hil.numerics.check import run_inputs

    return run_inputs(pte, load_inputs(compiled), request.model, request.inputs_file,
                      allow_nonfinite=request.allow_nonfinite_inputs)


def _references(request: RunRequest, compiled: CompiledModel, checked: CheckedRequest,
                run_inputs: RunInputs | None, log_path: Path) -> References:
    """The numerics references of the run's inputs (hil.aot.references): from the export's cache entry (the
    export stored those of the example inputs), else computed where the model's code may run (a child with
    the export's deadline, its output in export.log, for a user's model) and stored there."""
    assert run_inputs is not None  # wants_references holds
    return references_for(request.model, compiled.pte_path.parent, compiled.pte_path, run_inputs.torch_inputs,
                          checked.delegate, timeout_s=checked.export_timeout_s, options=checked.export_options,
                          log_path=log_path)


def _import_frameworks(timer: StepTimer) -> None:
    """torch and executorch take seconds to import (more on a cold disk): their own step, not hidden in another."""
    if "executorch.devtools" in sys.modules:
        return
    with timer.step("import", "import torch, executorch"):
        import executorch.devtools  # noqa: F401  (the Inspector; pulls in torch and executorch.exir)
        import executorch.exir  # noqa: F401


def run_profile(
    request: RunRequest, report: Callable[[str], None] | None = None, progress: Progress | None = None
) -> RunResult:
    """Profile one model on one board; artifacts land in `request.out_dir` even when a step fails.

    `progress` hears of each step as it starts (hil.base.progress); `report` gets one line per finished step.

    The folder is locked for the whole run (hil.run.folder): a second run into it fails at once, or
    waits with `request.wait`. Inputs are checked before any work (hil.config.inputs).
    """
    out = inputs.writable_folder(out_folder.named_folder(request.out_dir))
    folder = RunFolder(out)
    try:
        with folder.lock(wait=request.wait, report=report or log.warning):
            out_folder.claim(out, RUN_FILES)  # refuses files no run wrote; never deletes them
            with native_log.logged_to(out / native_log.LOG_NAME):  # the host runtime's C++ lines (hil.base.native_log)
                return _run_in(folder, request, StepTimer(report, progress))
    except OSError as exc:  # the lock or the journal on a full or read-only disk
        error = WriteError.if_write_error(exc, out)
        if error is None:
            raise
        raise error from exc


def _run_in(folder: RunFolder, request: RunRequest, timer: StepTimer) -> RunResult:
    """The run itself, in the locked `folder`; manifest.json is written however it ends."""
    out, report = folder.path, timer.report
    provenance: dict[str, Any] = {
        "model": request.model,
        **board_provenance(request.board),
        "iterations": request.iterations,
        "warmup": request.warmup,
        "status": "failed",
        **({"lab": request.board.get("lab")} if request.board.get("lab") else {}),  # place, exporter host
    }
    if request.board.kind == "qemu":  # which image was asked for, by whom (command line, HIL_FIRMWARE, ...)
        provenance["firmware_choice"] = choice_record(request.board, request.required_firmware)
    try:
        checked = check_request(request, report)  # a bad input fails here, before any work
        delegate = provenance["delegate"] = checked.delegate  # a run failing in export keeps its series (history)
        _import_frameworks(timer)
        hit = is_cached(request.model, delegate=delegate, options=checked.export_options)
        with timer.step("aot", f"export {request.model} ({'cached' if hit else 'cache miss'}, delegate {delegate})"):
            compiled = export_isolated(request.model, delegate=delegate, options=checked.export_options,
                                       timeout_s=checked.export_timeout_s,
                                       log_path=out / "export.log")
        # aot_followed: what the model read while exported, which the cache key follows (hil.aot.reads).
        provenance.update(aot_cache_key=compiled.cache_key, aot_cached=compiled.cached, delegate=delegate,
                          model_name=compiled.name, aot_followed=compiled.reads.summary(),
                          quantization=None if compiled.quantization is None else compiled.quantization.to_json())
        if compiled.extra.get("cpu_reasons"):  # the lowering's words; no dump holds them: `hil inspect RUN_DIR` reads them here
            provenance["cpu_fallback_reasons"] = compiled.extra["cpu_reasons"]
        if compiled.extra.get("delegate_note"):  # once per run: the delegate got nothing (a float program on neutron-sim)
            provenance["delegate_note"] = compiled.extra["delegate_note"]
        atomic.copy_file(compiled.pte_path, out / "model.pte")
        atomic.copy_file(compiled.etrecord_path, out / "etrecord.bin")
        if compiled.extra.get("conversion_log"):
            atomic.write_text(out / "neutron_convert.log", compiled.extra["conversion_log"])
        provenance["model_memory"] = inputs.check_model_fits(request.board, out / "model.pte")
        if request.debug_outputs:  # refused here, before any image is built, when the outputs would not fit
            from hil.drift.debug_size import check_debug_fits

            provenance["debug_buffer"] = check_debug_fits(request.board, out / "model.pte", checked.plan.runs)
        run_inputs = _run_inputs(request, compiled, out / "model.pte")  # wrong inputs are refused before any image
        prepared = prepare_image(request, compiled, checked, timer)
        # A program the delegate took nothing of (a float one on neutron-sim) runs wholly on the CPU kernels: its
        # outputs are computed and compared like a CPU-only program's, never said "not computed (simulated NPU)".
        reason = skip_reason(enabled=request.numerics, firmware=prepared.firmware,
                             delegate=delegate if compiled.delegated else "none", elf=prepared.elf)
        if run_inputs is not None and reason in (None, SIM_NPU_REASON):  # an image that takes inputs gets them
            checked = replace(checked, plan=replace(checked.plan, inputs=run_inputs.tensors,
                                                    ram=tuple(request.board.ram_regions)))
        # Streamed or read out (hil.config.etdump_bound); a replay image's host-made ETDump is always read out.
        stream = bool(prepared.transport and prepared.transport["stream"])
        checked = replace(checked, plan=replace(checked.plan, stream=stream))
        if prepared.transport is not None:
            provenance["etdump_transport"] = prepared.transport
        image, simulation = prepared.elf, prepared.simulation
        # The QEMU runtime image really runs the program; replays and simulated boards say so.
        simulated = is_simulated(request.board.kind, prepared.firmware)
        provenance["time_scale"] = prepared.time_scale.to_dict()  # how `hil inspect RUN_DIR` reads the ticks again
        provenance["firmware_sha256"] = sha256_file(image)
        provenance["firmware"] = str(image)
        provenance["firmware_kind"] = prepared.firmware
        provenance["simulated"] = simulated
        if simulation is not None:
            atomic.write_json(out / "simulation.json", simulation)
        capture = _run_on_board(request, image, checked, timer, provenance)
        provenance["etdump_crc32"] = capture.crc32
        if capture.notes:
            provenance["board_notes"] = capture.notes
        if capture.outputs is not None:
            write_outputs(out / "outputs.pt", capture.outputs)  # the target's outputs, for anyone to check again
        console = parse_console(capture.console)
        with timer.step("analyse", "analyse the ETDump with the ETRecord"):
            built = build_profile(
                out / "trace.etdump",
                out / "etrecord.bin",
                board=request.board.name,
                model=compiled.name,
                simulated=simulated,
                time_scale=prepared.time_scale,
                console=console,
                pte_path=out / "model.pte",
            )
        # What the run adds beside the dump, in profile.json's order: first the stack and flash footprint.
        sections: dict[str, Any] = footprint_sections(image, built, capture.stack)
        provenance["footprint"] = dict(sections)  # no dump holds them: `hil inspect RUN_DIR` takes them from here
        if request.numerics:
            with timer.step("numerics", "compare the outputs with eager PyTorch and the host runtime"):
                refs = (_references(request, compiled, checked, run_inputs, out / "export.log")
                        if wants_references(run_inputs, capture.outputs, reason=reason) else None)
                scales = list(compiled.quantization.output_scales) if compiled.quantization is not None else None
                sections["numerics"] = numerics_section(run_inputs, capture.outputs, refs, reason=reason,
                                                        output_scales=scales)
            provenance["numerics"] = sections["numerics"]  # no dump holds it: `hil inspect RUN_DIR` takes it from here
        if request.debug_outputs:
            sections["drift"] = _drift(out, compiled, capture, checked, request, timer,
                                       written=run_inputs.torch_inputs if checked.plan.inputs is not None else None)
            provenance.update(drift_snr_db=sections["drift"]["threshold_snr_db"],
                              drift_inputs=sections["drift"]["inputs"])
        if request.board.kind == "qemu":
            from hil.firmware.qemu_firmware import annotations

            provenance["annotations"] = annotations(request.board, prepared.firmware, simulation)
        elif request.board.kind == "rt700-emu":
            from hil.boards.rt700_emu import time_base as emulated_time_base

            provenance["annotations"] = {"firmware": "rt700-emu",
                                         "time_base": emulated_time_base(request.board.clock_mhz)}
        profile = finish_profile(built, warmup=request.warmup, delegate=delegate, **sections,
                                 delegate_note=provenance.get("delegate_note"),
                                 quantization=provenance.get("quantization"),
                                 **({"cpu_fallback_reasons": provenance["cpu_fallback_reasons"]}
                                    if "cpu_fallback_reasons" in provenance else {}),
                                 **provenance.get("annotations", {}))
        profile = profile.replace(harness_steps_s={**timer.seconds, **capture.steps_s})
        folder.write_profile(profile)
        _write_trace(out, report)
        provenance["status"] = "passed"
        return RunResult(out, profile, compiled, capture, dict(timer.seconds), simulation)
    except OSError as exc:
        error = WriteError.if_write_error(exc, out)
        _record_error(provenance, out, exc if error is None else error)
        if error is None:
            raise
        raise error from exc
    except BaseException as exc:  # KeyboardInterrupt: Ctrl-C, or SIGTERM (hil.target.process)
        _record_error(provenance, out, exc)
        raise
    finally:
        provenance["steps_s"] = dict(timer.seconds)
        _write_manifest_last(folder, provenance)


def _record_error(provenance: dict[str, Any], out: Path, exc: BaseException) -> None:
    """What the manifest says about how the run failed; a fault's summary too; an unexpected error's
    traceback goes to error.txt (when the disk still takes it)."""
    if isinstance(exc, HilError):
        provenance["error"] = str(exc)
        provenance["error_kind"] = "input" if isinstance(exc, InputError) else type(exc).__name__
        fault = getattr(exc, "fault", None)
        if fault:
            provenance["fault"] = fault.get("summary")
    elif isinstance(exc, KeyboardInterrupt):
        # hil.target.process names the signal; a bare KeyboardInterrupt was raised, not signalled
        provenance["error"] = f"interrupted by {str(exc) or 'KeyboardInterrupt (raised, no signal)'}"
        provenance["error_kind"] = "interrupted"
    else:
        provenance["error"] = f"{type(exc).__name__}: {exc}"
        try:
            atomic.write_text(out / "error.txt", traceback.format_exc())
        except OSError:
            pass


def _write_manifest_last(folder: RunFolder, provenance: dict[str, Any]) -> None:
    """manifest.json however the run ended; once written it says which files are the run's (the
    journal goes). A manifest that cannot be written fails a run that passed; a failed run keeps its
    own error (the journal stays, so the next run still knows the files are a run's), which says the manifest
    is missing too when the error is a full disk's. The room kept since claim() is given back first."""
    out_folder.release_reserve(folder.path)
    try:
        folder.write_manifest(provenance)
    except OSError as exc:
        missing = WriteError.from_os(exc, folder.path / "manifest.json")
        if provenance.get("status") == "passed":
            raise missing from exc
        if provenance.get("error_kind") == WriteError.__name__:  # still one line: the run's error, then this
            raise WriteError(missing.errno, f"{provenance['error']}; {missing} too", missing.filename) from exc
        return
    out_folder.settled(folder.path)


def _drift(out: Path, compiled: CompiledModel, capture: RunCapture, checked: CheckedRequest, request: RunRequest,
           timer: StepTimer, *, written: tuple[Any, ...] | None) -> dict[str, Any]:
    """The `drift` section (hil.drift): every operator's outputs against the ETRecord's reference graph."""
    from hil.drift import run_step
    from hil.drift.gap import DEFAULT_SNR_DB

    threshold = DEFAULT_SNR_DB if request.drift_snr_db is None else request.drift_snr_db
    with timer.step("drift", "compare every operator's outputs with the ETRecord (numeric gap)"):
        # `written`: the torch inputs the harness wrote into the target (hil.numerics); None: its fill byte.
        return run_step.analyse(out, compiled, capture.debug_buffer, runs=checked.plan.runs, threshold_db=threshold,
                                simulated_npu=checked.delegate == "neutron-sim" and compiled.delegated, inputs=written, figures={
                                    "debug_buffer_bytes": request.board.get("memory.debug_buffer_bytes")})


def _write_trace(out: Path, report: Callable[[str], None] | None) -> None:
    """trace.json beside profile.json (hil.report.trace), so every run folder opens in Perfetto; a trace
    that cannot be written costs a line, never the run."""
    from hil.report.trace import write_trace_json

    try:
        write_trace_json(out)
    except (HilError, OSError) as exc:
        (report or (lambda line: print(line, file=sys.stderr)))(f"[hil] trace.json not written: {exc}")


def _run_on_board(request: RunRequest, image: Path, checked: CheckedRequest, timer: StepTimer,
                  provenance: dict[str, Any]) -> RunCapture:
    """Flash and run the plan, always closing the board; the board writes serial.log and trace.etdump into out_dir.

    provenance["flash"] says whether the image was written or the target held it already, and why."""
    if checked.elf is None:  # the harness's own image: a --breakpoint or --result-expr it lacks is refused here
        from hil.target.elf_preflight import check_run_symbols

        check_run_symbols(image, request.board)
    board = open_board(request.board, request.out_dir, Within(timer.progress),  # its own steps, live too
                       keeper=request.qemu_keeper)
    try:
        with timer.step("flash", f"flash {image.name} to {request.board.name}") as advance:
            board.flash(image, progress=advance, force=request.force_flash)
        if board.flash_record is not None:
            provenance["flash"] = board.flash_record
            if board.flash_record["done"] == "skipped":
                timer.progress.note(f"flash skipped: {board.flash_record['why']}")
        with timer.step("run", f"run {checked.plan.describe()} and read out the ETDump"):
            capture = board.run(checked.timeout_s, checked.plan)
    finally:
        board.close()
    trace = request.out_dir / "trace.etdump"
    if not trace.is_file():
        atomic.write_bytes(trace, capture.etdump)
    return capture
