"""`hil`: the command line front end. Each sub-command is a thin wrapper over one library call.

Exit status, the same for every sub-command: 0 ok; 1 a test failed (a regression in `hil compare`,
a failed check in `hil check-image`); 2 a usage or input error (bad option, board file, model or
file); 3 a board or infrastructure error (target, debugger, toolchain, missing tools in `hil doctor`);
130 interrupted; 141 the reader of its output went away (`hil inspect RUN | head`): quiet, as a Unix tool
killed by SIGPIPE (128 + 13), so a pipeline under `set -o pipefail` still sees the output was cut short.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import IO

from hil.aot.quantize import add_arguments as add_quantize_arguments
from hil.config.board_config import BoardConfig, load_board_config
from hil.base.defaults import DEFAULT_ITERATIONS
from hil.base.errors import AnalysisError, HilError, InputError, ModelError, WriteError
from hil.config.options import OVERRIDES, overrides_from

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_INFRA = 0, 1, 2, 3
EXIT_INTERRUPTED, EXIT_CLOSED_PIPE = 130, 141  # 128 + SIGINT, 128 + SIGPIPE: what a shell shows for either signal
EXIT_CODES_HELP = (
    "exit status: 0 ok; 1 a test or regression failure; 2 a usage or input error (options, board file, model, "
    "files), refused before any work; 3 a board or infrastructure error (target, debugger, toolchain); "
    "130 interrupted; 141 the output's reader closed the pipe (`| head`)"
)
# Errors in what the user gave us (a board file error is an InputError); every other HilError is the
# board's or the machine's.
INPUT_ERRORS = (InputError, ModelError, AnalysisError)


def exit_code_for(exc: HilError) -> int:
    return EXIT_USAGE if isinstance(exc, INPUT_ERRORS) else EXIT_INFRA


def _add_board_options(parser: argparse.ArgumentParser, *, required: bool) -> None:
    parser.add_argument("--board", default=None if not required else "qemu", metavar="NAME",
                        help="board name (boards/NAME.toml)")
    parser.add_argument("--board-config", "--hil-board-config", type=Path, default=None, metavar="FILE",
                        help="board file; wins over --board")
    group = parser.add_argument_group("board-file overrides (each also as --hil-NAME, as in pytest)")
    for opt in OVERRIDES:
        group.add_argument(opt.short_flag, opt.flag, dest=opt.dest, type=opt.type, default=None, metavar=opt.metavar,
                           help=opt.help)


def _add_lab_options(parser: argparse.ArgumentParser) -> None:
    from hil.lab.session import LAB_OPTIONS

    group = parser.add_argument_group("shared lab (labgrid place, lab file)")
    for flag, dest, kind, metavar, text in LAB_OPTIONS:
        group.add_argument(flag, dest=dest, type=kind, default=None, metavar=metavar, help=text)


def _add_drift_threshold(parser: argparse.ArgumentParser) -> None:
    from hil.drift.gap import DEFAULT_SNR_DB

    parser.add_argument("--drift-snr-db", "--hil-drift-snr-db", dest="drift_snr_db", type=float, default=None,
                        metavar="DB", help=f"with debug outputs: an operator below this SNR drifts (default {DEFAULT_SNR_DB:g})")


def board_from_args(args: argparse.Namespace) -> BoardConfig:
    cfg = load_board_config(args.board, args.board_config)
    return cfg.with_overrides(overrides_from(vars(args)))


def _cmd_run(args: argparse.Namespace) -> int:
    from hil.lab.session import LabOptions, held_board
    from hil.run.out_folder import named_folder

    named_folder(args.out)  # an empty --out (an unset variable), the root, a user's own folder: refused first
    # A bad board file fails here, before torch is imported; a named place is held for the whole run.
    with held_board(board_from_args(args), LabOptions.from_values(vars(args))) as board:
        return _run_on(board, args)


def _run_on(board: BoardConfig, args: argparse.Namespace) -> int:
    from hil.cli.table import format_table
    from hil.run.pipeline import RunRequest, run_profile

    request = RunRequest(
        model=args.model,
        board=board,
        out_dir=Path(args.out),
        iterations=args.iterations,
        warmup=args.warmup,
        timeout_s=args.timeout,
        delegate="none" if args.no_delegate else args.delegate,
        seed=args.seed,
        jitter=args.jitter,
        wait=args.wait,
        debug_outputs=args.debug_outputs,
        drift_snr_db=args.drift_snr_db,
        export_timeout_s=args.export_timeout,
        inputs_file=args.inputs,
        allow_nonfinite_inputs=args.allow_nonfinite_inputs,
        numerics=not args.no_numerics,
        force_flash=args.force_flash,
        quantize=args.quantize,
        calibration_file=args.calibration,
    )
    from hil.base.progress import for_stream

    progress = for_stream(sys.stderr, quiet=args.quiet, durations=args.verbose)
    try:
        result = run_profile(request, progress=progress)
    except HilError as exc:
        # An input refused is one line; a failed run also says where its evidence is.
        kept = "" if isinstance(exc, (InputError, WriteError)) else f"\n(artifacts kept in {args.out})"
        print(f"hil run: {exc}{kept}", file=sys.stderr)
        return exit_code_for(exc)
    if args.json:
        print(json.dumps({"artifacts": str(result.out_dir), "profile": result.profile.to_json()}, indent=2))
        return EXIT_OK
    print(format_table(result.profile))
    print(f"\nartifacts: {result.out_dir}")
    return EXIT_OK


def _cmd_export(args: argparse.Namespace) -> int:
    """The AOT step alone: what a bench needs before it can build the firmware."""
    from hil.cli.export_cmd import export_program

    export_program(args.model, args.out, args.delegate, args.export_timeout, quantize=args.quantize,
                   calibration=args.calibration)
    return 0


def _cmd_inspect(args: argparse.Namespace) -> int:
    from hil.cli.inspect_cmd import InspectRequest, inspect_files

    return inspect_files(InspectRequest(args.path, args.etrecord, args.pte, args.clock_mhz, args.board_config, args.ns,
                                        args.json, args.no_verify, getattr(args, "drift_snr_db", None)))


def _cmd_doctor(args: argparse.Namespace) -> int:
    from hil.cli.doctor import run_doctor

    cfg = board_from_args(args) if (args.board or args.board_config) else None  # the board file is checked first
    return EXIT_OK if run_doctor(cfg, as_json=args.json) == 0 else EXIT_INFRA


def _cmd_check_image(args: argparse.Namespace) -> int:
    from hil.firmware.image_check import run_command

    return run_command(args)


class _Parser(argparse.ArgumentParser):
    """argparse's parser, but its help and version text to a closed pipe is not dropped with exit status 0:
    argparse swallows the OSError of that write (`_print_message`, its one writer), so `hil --help | head`
    ended 0 unbuffered and 141 buffered. Here it raises, and `main` ends it with EXIT_CLOSED_PIPE."""

    def _print_message(self, message: str, file: IO[str] | None = None) -> None:
        if message:
            (file or sys.stderr).write(message)


def build_parser() -> argparse.ArgumentParser:
    from hil.records.manifest import package_version

    parser = _Parser(prog="hil", description="Profile ExecuTorch models on an RT700 board or in QEMU.",
                                     epilog=EXIT_CODES_HELP)
    parser.add_argument("--version", action="version", version=f"hil (et-hil) {package_version('et-hil') or 'unknown'}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    run = sub.add_parser("run", help="profile one model on one board and write its artifacts")
    _add_board_options(run, required=True)
    run.add_argument("--model", required=True, metavar="MODEL",
                     help="built-in name (cifar10, ds_cnn, ...) or path/to/file.py:factory")
    run.add_argument("--out", required=True, metavar="DIR", help="folder for the run's artifacts")
    run.add_argument("--iterations", type=int, default=DEFAULT_ITERATIONS, metavar="N",
                     help=f"inferences profiled (default {DEFAULT_ITERATIONS})")
    run.add_argument("--warmup", type=int, default=0, metavar="W", help="inferences run first and not counted")
    run.add_argument("--timeout", type=float, default=None, metavar="S",
                     help="seconds for the board run (default: board file)")
    run.add_argument("--export-timeout", type=float, default=None, metavar="S",
                     help="seconds the export of a model file may take (default: board file, else 600)")
    run.add_argument("--delegate", default=None, metavar="NAME", help="none, neutron-sim, neutron or cortex-m (default: board file)")
    run.add_argument("--no-delegate", action="store_true", help="keep a CPU-only program")
    add_quantize_arguments(run)
    run.add_argument("--seed", type=int, default=0, metavar="N", help="seed of the simulated cost model")
    run.add_argument("--jitter", type=float, default=None, metavar="F",
                     help="relative run-to-run jitter of the simulation")
    run.add_argument("--wait", action="store_true",
                     help="wait for another run writing --out to finish (default: refuse at once)")
    run.add_argument("--debug-outputs", "--hil-debug-outputs", dest="debug_outputs", action="store_true",
                     help="record every operator's outputs on the target and name the first that drifts from the ETRecord")
    _add_drift_threshold(run)
    run.add_argument("--inputs", "--hil-inputs", type=Path, default=None, metavar="FILE",
                     help="input tensors (.pt: a tensor or tuple of them; .npz: arrays in order) instead of the model's "
                          "example inputs; refused before flashing when they do not fit the program")
    run.add_argument("--allow-nonfinite-inputs", "--hil-allow-nonfinite-inputs", action="store_true",
                     help="run inputs that hold NaN or infinity (refused by default); the numerics then say "
                          "\"outputs not finite\"")
    run.add_argument("--no-numerics", action="store_true",
                     help="skip the numerics check (the target keeps its fill-byte inputs, outputs are not read)")
    run.add_argument("--force-flash", "--hil-force-flash", action="store_true",
                     help="program the image even when the board holds it already (the flash is read back "
                          "through the probe first, and programming skipped when it matches)")
    run.add_argument("-v", "--verbose", action="store_true", help="also print each step's duration as it ends")
    run.add_argument("-q", "--quiet", action="store_true", help="print no step lines or progress bars")
    run.add_argument("--json", action="store_true", help="print the profile as JSON instead of the table")
    _add_lab_options(run)
    run.set_defaults(func=_cmd_run)

    export = sub.add_parser("export", help="convert a model to model.pte + etrecord.bin (for a firmware build)")
    export.add_argument("--model", required=True, metavar="MODEL", help="built-in name or path/to/file.py:factory")
    export.add_argument("--out", required=True, metavar="DIR")
    export.add_argument("--export-timeout", type=float, default=None, metavar="S",
                        help="seconds the export of a model file may take (default 600)")
    export.add_argument("--delegate", default="none", metavar="NAME", help="none, neutron-sim, neutron or cortex-m (default none)")
    add_quantize_arguments(export)
    export.set_defaults(func=_cmd_export)

    from hil.cli import inspect_args

    inspect = sub.add_parser("inspect", help="analyse a run folder, or an ETDump/ETRecord pair from anywhere")
    inspect_args.add_arguments(inspect)
    _add_drift_threshold(inspect)
    inspect.set_defaults(func=_cmd_inspect)

    doctor = sub.add_parser("doctor", help="check this machine for what a board needs (the board file first)")
    _add_board_options(doctor, required=False)
    doctor.add_argument("--json", action="store_true", help="print the checks as JSON")
    doctor.set_defaults(func=_cmd_doctor)

    from hil.firmware.image_check import add_arguments as add_check_image_arguments

    check_image = sub.add_parser("check-image", help="check a firmware ELF before flashing it (exit 1: a check failed)")
    add_check_image_arguments(check_image)
    check_image.set_defaults(func=_cmd_check_image)

    from hil.cli import rt700_image

    rt700 = sub.add_parser("rt700-image", help="build the RT700 firmware image of one program (from any install)")
    rt700_image.add_arguments(rt700)
    rt700.set_defaults(func=rt700_image.run)

    from hil.firmware import sources, sources_cmd

    pinned = sub.add_parser("sources", help="assemble the pinned firmware sources (ExecuTorch, MCUXpresso SDK) that "
                            "the QEMU runtime image and the RT700 firmware are built from")
    sources_cmd.add_arguments(pinned)
    pinned.set_defaults(func=sources_cmd.run)

    firmware_sources = sub.add_parser("firmware-sources", help="copy the RT700 firmware sources out of the package")
    sources.add_arguments(firmware_sources)
    firmware_sources.set_defaults(func=sources.run)

    from hil.cli.regress_cmds import add_regression_commands

    add_regression_commands(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    """The command's exit status; a closed pipe on stdout or stderr ends it quietly (EXIT_CLOSED_PIPE)."""
    try:
        try:
            return _main(argv)
        finally:  # argparse's --help exits too: flushed here, not at the interpreter's exit (a printed traceback)
            sys.stdout.flush()
    except BrokenPipeError:
        _drop_closed_streams()
        return EXIT_CLOSED_PIPE


def _drop_closed_streams() -> None:
    """Point stdout and stderr at /dev/null once a pipe under them closed, so the text still buffered (and the
    flush at exit) goes nowhere instead of raising again: the reader has gone, nobody would read it."""
    import os

    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BrokenPipeError:
            null = os.open(os.devnull, os.O_WRONLY)
            os.dup2(null, stream.fileno())
            os.close(null)
        except (OSError, ValueError):  # a stream closed or replaced by the caller: left as it is
            pass


def _main(argv: list[str] | None) -> int:
    from hil.base.quiet import quiet_third_party

    quiet_third_party()  # first: importing torch and executorch must not print over a one-line error
    words = sys.argv[1:] if argv is None else argv
    if words[:1] == ["inspect"]:
        from hil.cli.inspect_args import precheck

        try:
            precheck(words[1:])  # a path that cannot work is refused before the seconds of the import
        except HilError as exc:
            print(f"hil inspect: {exc}", file=sys.stderr)
            return exit_code_for(exc)
        # Loaded before the harness's own modules, the Inspector's large ETDumps cost no extra second of
        # mmap/munmap system time (bench/inspect_speed.py measures the whole command against a bare Inspector).
        import executorch.devtools  # noqa: F401
    from hil.target.process import stop_children_on_sigterm

    stop_children_on_sigterm()
    parser = build_parser()
    args = parser.parse_args(argv)  # argparse exits 2 on a usage error
    if args.command is None:
        parser.print_help()
        return EXIT_OK
    from hil.base import log
    from hil.run.out_folder import clean_named

    clean_named(vars(args).values())  # a killed read-out's .partial goes once no run holds its folder
    try:
        with log.drawn_on(sys.stderr):
            return int(args.func(args))
    except HilError as exc:
        print(f"hil {args.command}: {exc}", file=sys.stderr)
        return exit_code_for(exc)
    except KeyboardInterrupt:
        print(f"hil {args.command}: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED


def console_main() -> None:
    """The `hil` command: `main()`, then, once torch is loaded, an exit that skips the interpreter's teardown.

    Freeing torch's and executorch's modules and objects one by one at exit took 1-2 s of a warm
    `hil run` and does nothing the end of the process does not. What an exit must do is kept: the
    atexit handlers run (logging, temporary folders) and stdout/stderr are flushed. A process with
    threads of its own still running, or without torch, exits the ordinary way.
    """
    import atexit
    import os
    import threading

    code = main()
    others = [t for t in threading.enumerate() if t is not threading.main_thread() and not t.daemon]
    if "torch" not in sys.modules or others:
        sys.exit(code)
    atexit._run_exitfuncs()  # noqa: SLF001  (what the interpreter runs first at exit)
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass  # a closed pipe: the exit status still says how it went
    os._exit(code)


if __name__ == "__main__":
    console_main()
