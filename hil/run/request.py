"""A run's request, and every input in it checked in one place before any work.

RunRequest is what the CLI and the pytest plugin can set; check_request turns it into the CheckedRequest
the pipeline runs (the plan, the timeouts, the delegate, the user's ELF), or raises InputError /
BoardConfigError with one line naming the value, the limit and where the limit comes from (the CLI exits 2).
Why up front: checked where it is used, a bad value surfaces late and as a traceback (`--iterations 100000`
after two minutes of simulation, `--jitter nan` deep in the cost model), or not at all (`--timeout 0` taken
for "the board's default"). What a valid number is lives in hil.base.checks, shared with the board-file
schema; what depends on the exported program (its size, whether the inputs fit it) is checked once it exists
(hil.config.inputs.check_model_fits, hil.numerics.check.run_inputs); the inputs file itself (there, a file,
.pt or .npz, readable) is checked here.

The run-count limit is static: the image's real `max_runs` is only known once it runs (the
run-configuration handshake reads it and still refuses a larger plan), but both et-hil firmwares
take it from HIL_MAX_RUNS (firmware/common/hil_result.h, default 1000: the RT700 firmware keeps one
inference time per run in a static array of that length, the replay image refuses more), so a board
file states it as `[limits].max_runs` and a plan above it is refused before the export. The ETDump buffer's
bound (gdb transport) depends on the program: hil.config.etdump_bound checks it once the .pte exists, before
any image is built.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hil.aot.export import available_delegates
from hil.aot.models import resolve_spec
from hil.aot.quantize import options as quantize_options
from hil.base import log
from hil.base.checks import finite_number, whole_number
from hil.base.defaults import DEFAULT_EXPORT_TIMEOUT_S, DEFAULT_ITERATIONS
from hil.base.errors import BoardConfigError, InputError
from hil.boards import KINDS
from hil.boards.base import RunPlan
from hil.config.board_config import BoardConfig, RunSettings
from hil.records.tensors import check_inputs_path
from hil.firmware.qemu_firmware import Requirement

# HIL_MAX_RUNS's default in firmware/common/hil_result.h: what a board file without [limits] allows.
DEFAULT_MAX_RUNS = 1000
# What a board file that leaves a run setting out means.
BOARD_DEFAULTS: dict[str, Any] = {"limits.max_runs": DEFAULT_MAX_RUNS, "debug.timeout_s": 120,
                                  "aot.export_timeout_s": DEFAULT_EXPORT_TIMEOUT_S, "simulation.jitter": 0.0,
                                  "aot.delegate": "none"}
ELF_MAGIC = b"\x7fELF"


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
    wait: bool = False  # for another run holding out_dir, instead of failing at once
    debug_outputs: bool = False  # record every operator's outputs and name the first that drifts (hil.drift)
    drift_snr_db: float | None = None  # below it an operator drifts (None: hil.drift.gap.DEFAULT_SNR_DB)
    export_timeout_s: float | None = None  # for a user's model (hil.aot.isolated); default: board file, 600 s
    inputs_file: Path | None = None  # `--hil-inputs`: a .pt/.npz instead of the model's example inputs
    allow_nonfinite_inputs: bool = False  # inputs holding NaN/inf run (else refused: hil.records.tensors)
    numerics: bool = True  # write real inputs, read the outputs back and compare them (hil.numerics)
    # The QEMU image kind the run must have, and why (a nightly whose history is a runtime series): a run
    # that cannot have it fails, naming the missing part, instead of replaying (hil.firmware.qemu_firmware).
    required_firmware: Requirement | None = None
    force_flash: bool = False  # write the image even when the target holds it already (hil.probe.flash_check)
    # The pytest session's keeper of QEMU processes (hil.boards.qemu_keep): a run of the image a kept QEMU
    # holds resets it instead of starting QEMU again. None: every run starts its own (`hil run`).
    qemu_keeper: Any = None
    quantize: bool = False  # int8 with the delegate's quantizer (hil.aot.quantize)
    calibration_file: Path | None = None  # with quantize: calibration samples instead of the example inputs


def choose_delegate(request: RunRequest, report: Callable[[str], None] | None = None,
                    board_delegate: str | None = None) -> str:
    """The request wins; otherwise the board file's `[aot].delegate` (`board_delegate` when the caller read it);
    otherwise a CPU-only program.

    "auto" takes the real Neutron backend when the eIQ Neutron SDK imports, and otherwise says so in
    one line and takes the simulated one.
    """
    if board_delegate is None:
        board_delegate = str(request.board.get("aot.delegate", BOARD_DEFAULTS["aot.delegate"]))
    delegate = request.delegate or board_delegate
    if delegate != "auto":
        return delegate
    from hil.aot.neutron_sdk import sdk_available, sdk_reason

    if sdk_available():
        return "neutron"
    (report or log.warning)(f"{sdk_reason()}; using the simulated Neutron backend")
    return "neutron-sim"


@dataclass(frozen=True)
class CheckedRequest:
    """What the input checks settled: the plan, the board-run timeout, the delegate, a user's ELF."""

    plan: RunPlan
    timeout_s: float
    delegate: str
    jitter: float
    elf: Path | None
    export_timeout_s: float
    export_options: dict[str, Any] = field(default_factory=dict)  # hil.aot.export's options (quantization)


def check_request(request: RunRequest, report: Callable[[str], None] | None = None) -> CheckedRequest:
    """Every input of the request the user can get wrong, checked here before any work; InputError otherwise.

    The board file's side is read in one call (BoardConfig.run_settings) and every number, the request's or
    the board's fallback, is checked in one batch (_checked_numbers), so the check does not go back and forth
    between modules field by field.
    """
    cfg = request.board
    if cfg.kind not in KINDS:
        raise BoardConfigError(f"board '{cfg.name}' ({cfg.source}): unknown kind '{cfg.kind}' (known: {', '.join(KINDS)})")
    board = cfg.run_settings(BOARD_DEFAULTS)  # a board file's clock that is no positive number fails here
    timeout, export_timeout_s, jitter_share = _checked_numbers(request, board)
    plan = RunPlan(request.iterations, request.warmup, debug_outputs=request.debug_outputs,
                   stream=_streamed(request))
    resolved = resolve_spec(request.model)
    if request.delegate is not None and request.delegate not in (*available_delegates(), "auto"):
        raise InputError(f"unknown delegate '{request.delegate}'; available: {', '.join(available_delegates())}, auto")
    delegate = choose_delegate(request, report, board.delegate)
    if cfg.kind == "rt700-emu" and delegate != "none":
        raise InputError(f"board '{cfg.name}' has no NPU (an emulated Cortex-M33): delegate '{delegate}' is refused "
                         "before anything is built or flashed; run it CPU-only (--delegate none) or on --board rt700")
    if request.inputs_file is not None and not request.numerics:  # else the file was silently ignored
        raise InputError(f"--inputs {request.inputs_file} with --no-numerics: the inputs are written by the numerics"
                         " check, so the file would be ignored (the image keeps its fill byte); drop one of the two"
                         " (pytest: --hil-inputs with hil_profile(numerics=False))")
    if request.inputs_file is not None:  # a missing or foreign file, before the import
        check_inputs_path(request.inputs_file)
    if request.calibration_file is not None:
        check_inputs_path(request.calibration_file)
    export_options = quantize_options(request.quantize, request.calibration_file)
    elf = firmware_elf(cfg, resolved.name, delegate, board.elf)
    if elf is not None:  # the breakpoint, result and handshake symbols are in it, or nothing starts
        from hil.target.elf_preflight import check_run_symbols

        check_run_symbols(elf, cfg)
    return CheckedRequest(plan, timeout, delegate, jitter_share, elf, export_timeout_s, export_options)


def _streamed(request: RunRequest) -> bool:
    """Whether the board file streams the ETDump over the console (hil.config.etdump_bound); refused with the
    debug outputs, whose offsets into one debug buffer hold only for one dump."""
    from hil.config.etdump_bound import TRANSPORT_KEY, transport

    stream = transport(request.board) == "console"  # "auto" decides once the program's bound is known
    if stream and request.debug_outputs:
        raise InputError(f"board '{request.board.name}' streams the ETDump ({TRANSPORT_KEY} = \"console\"): the debug "
                         "outputs (--hil-debug-outputs) need the gdb transport, one dump read through the debugger")
    return stream


def _checked_numbers(request: RunRequest, board: RunSettings) -> tuple[float, float, float]:
    """Counts within the board's limit, the drift threshold, and the (timeout, export timeout, jitter) that apply:
    the request's where it sets one, else the board file's, each named as the user wrote it."""
    cfg = request.board
    whole_number(request.iterations, "iterations", at_least=1)
    whole_number(request.warmup, "warm-up", at_least=0)
    limit = whole_number(board.max_runs, f"board '{cfg.name}' ({cfg.source}): limits.max_runs", at_least=1)
    if request.iterations + request.warmup > limit:
        raise InputError(
            f"iterations {request.iterations} + warm-up {request.warmup} = {request.iterations + request.warmup}"
            f" runs: more than the {limit} board '{cfg.name}' allows (limits.max_runs, the firmware's HIL_MAX_RUNS)"
        )
    if request.drift_snr_db is not None:
        finite_number(request.drift_snr_db, "the drift threshold (SNR dB)")
    timeout = (finite_number(request.timeout_s, "timeout (seconds)", above=0) if request.timeout_s is not None
               else finite_number(board.timeout_s, f"board '{cfg.name}': debug.timeout_s", above=0))
    export_timeout = (
        finite_number(request.export_timeout_s, "export timeout (seconds)", above=0)
        if request.export_timeout_s is not None
        else finite_number(board.export_timeout_s, f"board '{cfg.name}': aot.export_timeout_s", above=0))
    jitter = (finite_number(request.jitter, "jitter", at_least=0, below=1) if request.jitter is not None
              else finite_number(board.jitter, f"board '{cfg.name}': simulation.jitter", at_least=0, below=1))
    return timeout, export_timeout, jitter


def firmware_elf(cfg: BoardConfig, model: str, delegate: str, text: str) -> Path | None:
    """The user's firmware image (`firmware.elf`, `--elf`), checked; None without one (the harness builds it).

    Without one, QEMU runs the image the harness builds and the RT700 boards the bench image it builds
    (hil.firmware.rt700_runtime); either runs a user's own when given (a user's own mps2-an505 firmware that
    speaks the handshakes), else the replay image the harness builds. `{model}` and `{delegate}` let
    one board file serve a suite with an image per program; a relative path in the board file was
    made absolute against the board file's own folder when the file was read (`--hil-elf` paths
    arrive absolute, from the working directory).
    """
    if not text:  # QEMU's image and the RT700 boards' are then built by the harness (hil.run.image)
        return None
    elf = Path(text.format(model=model, delegate=delegate)).expanduser()
    if not elf.is_file() and cfg.kind in ("rt700", "rt700-emu"):
        from hil.base.commands import rt700_image

        raise BoardConfigError(f"board '{cfg.name}': firmware image {elf} not found; build it with "
                               f"{rt700_image(model, delegate)}")
    return elf_file(elf, f"board '{cfg.name}': firmware image")


def elf_file(path: Path, what: str) -> Path:
    """An existing ELF file (checked by its magic bytes); InputError otherwise."""
    try:
        with open(path, "rb") as handle:
            magic = handle.read(4)
    except OSError as exc:
        raise InputError(f"{what} {path}: cannot read it: {exc.strerror or exc}") from exc
    if magic != ELF_MAGIC:
        raise InputError(f"{what} {path} is not an ELF file (it starts with {magic!r})")
    return Path(path)
