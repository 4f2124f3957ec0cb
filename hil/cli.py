"""`hil`: the command line front end. Each sub-command is a thin wrapper over one library call."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from hil.config import BoardConfig, load_board_config
from hil.errors import HilError
from hil.options import OVERRIDES, overrides_from


def _add_board_options(parser: argparse.ArgumentParser, *, required: bool) -> None:
    parser.add_argument("--board", default=None if not required else "qemu", help="board name (boards/NAME.toml)")
    parser.add_argument("--board-config", type=Path, default=None, help="board file; wins over --board")
    group = parser.add_argument_group("board-file overrides")
    for opt in OVERRIDES:
        group.add_argument(opt.flag, dest=opt.dest, type=opt.type, default=None, help=opt.help)


def board_from_args(args: argparse.Namespace) -> BoardConfig:
    cfg = load_board_config(args.board, args.board_config)
    return cfg.with_overrides(overrides_from(vars(args)))


def _cmd_run(args: argparse.Namespace) -> int:
    from hil.analysis.table import format_table
    from hil.pipeline import RunRequest, run_profile

    request = RunRequest(
        model=args.model,
        board=board_from_args(args),
        out_dir=args.out,
        iterations=args.iterations,
        warmup=args.warmup,
        timeout_s=args.timeout,
        delegate="none" if args.no_delegate else args.delegate,
        seed=args.seed,
        jitter=args.jitter,
    )
    report = (lambda line: print(line, file=sys.stderr)) if args.verbose else None
    try:
        result = run_profile(request, report=report)
    except HilError as exc:
        print(f"hil run: {exc}\n(artifacts kept in {args.out})", file=sys.stderr)
        return 1
    print(format_table(result.profile))
    print(f"\nartifacts: {result.out_dir}")
    return 0


def _cmd_export(args: argparse.Namespace) -> int:
    """The AOT step alone: what a bench needs before it can build the firmware."""
    import shutil

    from hil.aot.export import export_model

    compiled = export_model(args.model, delegate=args.delegate)
    args.out.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(compiled.pte_path, args.out / "model.pte")
    shutil.copyfile(compiled.etrecord_path, args.out / "etrecord.bin")
    if compiled.extra.get("conversion_log"):
        (args.out / "neutron_convert.log").write_text(compiled.extra["conversion_log"])
    state = "from cache" if compiled.cached else "exported"
    print(f"{compiled.name}: {state}, delegated={compiled.delegated} -> {args.out}/model.pte, etrecord.bin")
    return 0


def _cmd_inspect(args: argparse.Namespace) -> int:
    from hil.analysis.inspect_cmd import inspect_files

    return inspect_files(args)


def _cmd_doctor(args: argparse.Namespace) -> int:
    from hil.doctor import run_doctor

    cfg = board_from_args(args) if (args.board or args.board_config) else None
    return run_doctor(cfg)


def _cmd_check_image(args: argparse.Namespace) -> int:
    from hil.firmware.image_check import run

    return run(args)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="hil", description="Profile ExecuTorch models on an RT700 board or in QEMU.")
    sub = parser.add_subparsers(dest="command", required=True)

    run = sub.add_parser("run", help="profile one model on one board and write its artifacts")
    _add_board_options(run, required=True)
    run.add_argument("--model", required=True, help="built-in name (cifar10, ds_cnn, ...) or path/to/file.py:factory")
    run.add_argument("--out", type=Path, required=True, help="folder for the run's artifacts")
    run.add_argument("--iterations", type=int, default=5, help="inferences profiled (default 5)")
    run.add_argument("--warmup", type=int, default=0, help="inferences run first and not counted")
    run.add_argument("--timeout", type=float, default=None, help="seconds for the board run (default: board file)")
    run.add_argument("--delegate", default=None, help="none, neutron-sim or neutron (default: board file)")
    run.add_argument("--no-delegate", action="store_true", help="keep a CPU-only program")
    run.add_argument("--seed", type=int, default=0, help="seed of the simulated cost model")
    run.add_argument("--jitter", type=float, default=None, help="relative run-to-run jitter of the simulation")
    run.add_argument("-v", "--verbose", action="store_true", help="print each step and its duration")
    run.set_defaults(func=_cmd_run)

    export = sub.add_parser("export", help="convert a model to model.pte + etrecord.bin (for a firmware build)")
    export.add_argument("--model", required=True, help="built-in name or path/to/file.py:factory")
    export.add_argument("--out", type=Path, required=True)
    export.add_argument("--delegate", default="none", help="none, neutron-sim or neutron (default none)")
    export.set_defaults(func=_cmd_export)

    inspect = sub.add_parser("inspect", help="analyse a run folder, or an ETDump/ETRecord pair from anywhere")
    inspect.add_argument("path", type=Path, help="a run folder, or an ETDump file (then --etrecord)")
    inspect.add_argument("--etrecord", type=Path, default=None, help="the ETRecord of an ETDump file")
    inspect.add_argument("--pte", type=Path, default=None, help="the model.pte of an ETDump file (checked against the ETRecord)")
    clock = inspect.add_mutually_exclusive_group()
    clock.add_argument("--board-config", type=Path, default=None, help="board file: its clock, for tick-based dumps")
    clock.add_argument("--clock-mhz", type=float, default=None, help="the ticks are core cycles at this clock")
    clock.add_argument("--ns", action="store_true", help="the timestamps are nanoseconds (the host runtime's)")
    inspect.add_argument("--json", action="store_true", help="print profile JSON instead of the table")
    inspect.set_defaults(func=_cmd_inspect)

    doctor = sub.add_parser("doctor", help="check this machine for what a board needs")
    _add_board_options(doctor, required=False)
    doctor.set_defaults(func=_cmd_doctor)

    from hil.firmware.image_check import add_arguments as add_check_image_arguments

    check_image = sub.add_parser("check-image", help="check a firmware ELF before flashing it (exit 1: a check failed)")
    add_check_image_arguments(check_image)
    check_image.set_defaults(func=_cmd_check_image)

    from hil.regress.commands import add_regression_commands

    add_regression_commands(sub)
    return parser


def _quiet_third_party() -> None:
    """torch/torchao/executorch announce deprecations and optional kernels they could not load on
    every import; on a bench console that buries the harness's own lines. `-W` or PYTHONWARNINGS
    still win, since they are applied after this."""
    import logging
    import warnings

    for category in (DeprecationWarning, FutureWarning, UserWarning):
        warnings.filterwarnings("ignore", category=category, module=r"(torch|torchao|executorch|copyreg)")
    warnings.filterwarnings("ignore", category=FutureWarning)
    for name in ("torchao", "torch.utils._pytree", "torch._export"):
        logging.getLogger(name).setLevel(logging.ERROR)


def main(argv: list[str] | None = None) -> int:
    if (sys.argv[1:] if argv is None else argv)[:1] == ["inspect"]:
        # Loaded before anything else, the Inspector's large ETDumps cost no extra seconds of mmap/munmap
        # system time (bench/inspect_speed.py measures the whole command against a bare Inspector).
        import executorch.devtools  # noqa: F401
    from hil.road.process import stop_children_on_sigterm

    _quiet_third_party()
    stop_children_on_sigterm()
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args))
    except HilError as exc:
        print(f"hil {args.command}: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"hil {args.command}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
