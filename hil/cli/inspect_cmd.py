"""`hil inspect`: the same analysis as a run, from a run folder or from bare files produced anywhere.

Two ways in, one truth each:

* `hil inspect RUN_DIR`: the run's own files (trace.etdump, etrecord.bin, model.pte, serial.log), first
  checked against the sha256s and the ETDump CRC-32 its manifest recorded (hil.records.evidence), and
  the clock its manifest recorded, with the console's clock line winning as it did in the run, and
  the run's warm-up dropped: the output is the run's profile.json (all but `harness_steps_s`, how long
  the harness itself took).
* `hil inspect DUMP --etrecord FILE`: nothing beside the dump is read. `--clock-mhz` says the ticks are
  core cycles; `--board-config` applies its board's rule (its clock for tick-based dumps only: a QEMU
  board's CPU-only programs are the host runtime's nanoseconds); `--ns` says nanoseconds; with none of
  them the numbers stay in ticks and the output says `time_unit: "ticks"`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hil.records import events as ev
from hil.records.console import parse_console
from hil.records.profile_model import Profile
from hil.analysis.timescale import TimeScale, board_time_scale
from hil.base.checks import finite_number
from hil.config.board_config import load_board_config
from hil.base.errors import AnalysisError
from hil.records.manifest import Manifest
from hil.run.folder import RunFolder, finish_profile
from hil.records.validate.files import read_bytes, read_json
from hil.records.validate.manifest import check_simulation

RUN_ONLY_KEYS = ("harness_steps_s",)


@dataclass(frozen=True)
class InspectRequest:
    """What `hil inspect` was asked: a run folder or a dump (with its ETRecord), and how to read its ticks."""

    path: Path
    etrecord: Path | None = None
    pte: Path | None = None
    clock_mhz: float | None = None
    board_config: Path | None = None
    ns: bool = False
    json: bool = False
    no_verify: bool = False
    drift_snr_db: float | None = None  # a debug-output run's drift threshold (None: the run's own)


def has_neutron_delegate(etrecord: Any) -> bool:
    """Does the ETRecord's program call a Neutron backend (so its dump is tick-based on any board)?"""
    return any(entry.get("name") in ev.NEUTRON_BACKEND_IDS
               for method in (etrecord._delegate_map or {}).values() for entry in (method or {}).values())


def bare_time_scale(args: InspectRequest, etrecord: Any) -> tuple[TimeScale, str]:
    """The scale of a bare dump, and the board name to report: explicit flags only, else raw ticks."""
    if args.clock_mhz is not None:  # checked positive and finite by inspect_files, before any file is read
        return TimeScale.core_cycles(args.clock_mhz), "clock"
    if args.board_config is not None:
        cfg = load_board_config(path=args.board_config)
        npu = cfg.get("simulation.npu_clock_mhz")  # only the simulated board's file names an NPU clock
        neutron = has_neutron_delegate(etrecord)
        if cfg.kind == "qemu":
            from hil.firmware.qemu_firmware import runtime_time_scale, would_run_runtime

            if would_run_runtime(cfg):  # what `hil run` on this board file runs now
                return runtime_time_scale(cfg), cfg.name
        return board_time_scale(cfg.kind, cfg.clock_mhz, neutron=neutron, npu_clock_mhz=npu), cfg.name
    if args.ns:
        return TimeScale.nanoseconds(), "unknown"
    return TimeScale.raw_ticks(), "unknown"


def _run_scale(folder: Path, manifest: Manifest) -> TimeScale:
    """The scale the run used: recorded in its manifest (runs before that: from what the folder holds)."""
    if manifest.time_scale:
        return TimeScale.from_dict(dict(manifest.time_scale))
    simulation = folder / "simulation.json"
    if simulation.is_file():
        sim = check_simulation(read_json(simulation), simulation)
        return TimeScale.core_cycles(sim["clock_mhz"], sim.get("npu_clock_mhz"))
    if manifest.board == "qemu":
        return TimeScale.nanoseconds()
    raise AnalysisError(f"{folder}: its manifest records no clock; inspect its files with --clock-mhz")


def inspect_run(folder: Path, drift_snr_db: float | None = None, *, verify: bool = True) -> Profile:
    """The profile of a run folder, made again from its files as `hil run` made it; with a debug buffer
    (a debug-output run), its `drift` section too, at `drift_snr_db` or the run's own threshold.
    `verify=False` (`--no-verify`): the manifest's digest of its own fields is not checked either."""
    from hil.analysis.profile import build_profile

    _refuse_links_out(Path(folder))
    run = RunFolder(Path(folder))
    if not run.has_manifest:
        raise AnalysisError(f"{folder} is not a run folder: no manifest.json")
    manifest = run.manifest(verify=verify)  # a corrupt or changed one: an AnalysisError naming it, never a traceback
    _refuse_unfinished(folder, manifest)
    serial_log = folder / "serial.log"
    console = None
    if serial_log.is_file():
        console = parse_console(read_bytes(serial_log, "a console log").decode("utf-8", errors="replace"))
    built = build_profile(
        folder / "trace.etdump", folder / "etrecord.bin",
        board=str(manifest.board), model=_model_name(manifest),
        simulated=_simulated(folder, manifest),
        time_scale=_run_scale(folder, manifest), console=console,
        pte_path=folder / "model.pte" if (folder / "model.pte").is_file() else None,
    )
    # What the run said beside the dump (its delegate, its outputs' check, what ran on QEMU), as the run finished it.
    numerics = {"numerics": manifest.numerics} if manifest.numerics else {}
    if "quantization" in manifest:  # what made the program (null: float), as the run recorded it
        numerics["quantization"] = manifest.quantization
    if manifest.cpu_fallback_reasons:  # why operators stayed on the CPU, as the lowering said it
        numerics["cpu_fallback_reasons"] = manifest.cpu_fallback_reasons
    footprint = {key: value for key, value in (manifest.footprint or {}).items() if key in ("stack", "code_size")}
    profile = finish_profile(built, warmup=int(manifest.warmup or 0), delegate=manifest.delegate, **footprint,
                             delegate_note=manifest.delegate_note,
                             **numerics, **dict(manifest.annotations or {}))
    if (folder / "debug.bin").is_file():
        from hil.drift.run_step import drift_of_folder

        profile = profile.replace(drift=drift_of_folder(folder, manifest, drift_snr_db))
    return profile


def _refuse_unfinished(folder: Path, manifest: Manifest) -> None:
    """A run that ended before its ETDump was written (killed, failed) is said so, as its manifest records it."""
    if (folder / "trace.etdump").exists() or not manifest.error:
        return
    how = "was interrupted" if manifest.extra.get("error_kind") == "interrupted" else "failed"
    raise AnalysisError(f"{folder}: the run {how} before it wrote its ETDump ({manifest.error}, as its manifest.json"
                        " records), so there is nothing to inspect")


def _refuse_links_out(folder: Path) -> None:
    """Every file the analysis reads is the folder's own: a link out of it is refused before any is read."""
    from hil.base.no_follow import stays_inside
    from hil.records.evidence import ANALYSED
    from hil.records.manifest import MANIFEST_NAME

    stays_inside(folder, (MANIFEST_NAME, *ANALYSED))


def _simulated(folder: Path, manifest: Manifest) -> bool:
    """As the run recorded it, else by its board's kind (hil.records.manifest); a manifest naming no board at
    all: simulated when the folder holds a simulation."""
    if manifest.board is None and manifest.simulated is None and manifest.board_kind is None:
        return (folder / "simulation.json").is_file()
    return manifest.is_simulated


def _model_name(manifest: Manifest) -> str:
    """The model's name as the run reported it (recorded since; older runs: derived from the spec)."""
    if manifest.model_name:
        return str(manifest.model_name)
    from hil.aot.models import resolve_spec
    from hil.base.errors import ModelError

    try:
        return resolve_spec(str(manifest.model)).name
    except ModelError:
        return str(manifest.model)


def _verify(folder: Path, skip: bool) -> list[str]:
    """Check the folder's files against its manifest (hil.records.evidence) first; the warning when told not to."""
    from hil.records.evidence import verify_run_folder

    if skip:
        return [f"{folder}: files not verified against manifest.json (--no-verify): the figures may not be the run's"]
    run = RunFolder(folder)
    if run.has_manifest:
        verify_run_folder(folder, run.manifest())
    return []


def inspect_files(args: InspectRequest) -> int:
    """Print the analysis of a run folder or of `args.path` against `args.etrecord`."""
    from hil.analysis.blocks import read_etrecord
    from hil.analysis.profile import build_profile
    from hil.cli.table import format_table

    from hil.cli.inspect_args import check

    check(args)  # paths that do not exist, a clock that is no positive number: refused before any work
    if getattr(args, "drift_snr_db", None) is not None:
        from hil.base.checks import finite_number

        finite_number(args.drift_snr_db, "--drift-snr-db")
    path = Path(args.path)
    if path.is_dir():
        _refuse_links_out(path)
        unverified = _verify(path, args.no_verify)
        profile = inspect_run(path, args.drift_snr_db, verify=not args.no_verify)
        profile = profile.replace(warnings=[*unverified, *profile.warnings])
    else:
        if args.etrecord is None:
            raise AnalysisError(f"{path} is a file: give its ETRecord with --etrecord (or pass a run folder)")
        etrecord = read_etrecord(Path(args.etrecord))
        scale, board = bare_time_scale(args, etrecord)
        profile = Profile.from_json(build_profile(path, args.etrecord, board=board, model=path.stem, simulated=False,
                                                  time_scale=scale, pte_path=args.pte, etrecord=etrecord))
    # One line: the C encoder (an indent would take the pure-Python one, seconds on a large dump).
    print(json.dumps(profile.to_json()) if args.json else format_table(profile))
    return 0
