"""`hil rt700-image --model MODEL --out DIR`: the RT700 firmware image of one program, from any install, in one command.

Why a command: a user who installed et-hil from a wheel has no checkout, so no `make firmware`
at a repository's root, and the board file's default image lies inside site-packages. The package
carries the firmware's sources and its makefile (firmware/rt700/rt700.mk); this command exports
the program (as `hil export`, unless MODEL is a .pte already), then builds the image as a run
on `--board rt700`/`rt700-emu` does (hil.firmware.rt700_runtime: the runtime once per workspace and toolchain in
the cache, the program a link), so DIR's copy is the very bytes such a run flashes. The image is DIR/hil_rt700.elf,
for `hil run --board rt700 --elf` or pytest's `--hil-elf`.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
from pathlib import Path

from hil.base.errors import BuildError, EnvironmentFault, InputError

from hil.base.commands import RT700_ELF as ELF_NAME, RT700_IMAGE as COMMAND

BUILD_TIMEOUT_S = 3600.0  # a cold build compiles ExecuTorch's portable kernels: 4-9 minutes on two cores


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", required=True, metavar="MODEL",
                        help="a .pte file, or a built-in name or path/to/file.py:factory to export first (as hil export)")
    parser.add_argument("--delegate", default="none", metavar="NAME",
                        help="with a model to export: none, neutron-sim, neutron or cortex-m (default none)")
    from hil.aot.quantize import add_arguments as add_quantize_arguments

    add_quantize_arguments(parser)
    parser.add_argument("--out", required=True, metavar="DIR",
                        help=f"folder for model.pte, etrecord.bin and {ELF_NAME}")
    parser.add_argument("--export-timeout", type=float, default=None, metavar="S",
                        help="seconds the export of a model file may take (default 600)")
    parser.add_argument("--jobs", type=int, default=None, metavar="N", help="compile jobs (default: one per core)")


def run(args: argparse.Namespace) -> int:
    from hil.config.inputs import writable_folder
    from hil.firmware.qemu_firmware import find_workspace, workspace_folder
    from hil.firmware.sources_cmd import HINT
    from hil.run.out_folder import named_folder

    out = writable_folder(named_folder(args.out)).absolute()
    workspace = find_workspace()  # before the export's seconds: the machine's part first
    if workspace is None:
        raise EnvironmentFault(f"no firmware source workspace at {workspace_folder()} (RT700_SDK_DIR), so no RT700 "
                               f"image is built; assemble it with {HINT}")
    pte = _program(args, out)
    from hil.firmware.rt700_runtime import build_rt700_image

    elf = build_rt700_image(pte, workspace, jobs=args.jobs, say=lambda line: print(f"{COMMAND}: {line}", file=sys.stderr))
    shutil.copyfile(elf, out / ELF_NAME)
    print(out / ELF_NAME)
    print(f"run it with: hil run --board rt700 --model {args.model} --elf {out / ELF_NAME} --out RUN_DIR")
    return 0


def _program(args: argparse.Namespace, out: Path) -> Path:
    """The .pte to build in: MODEL itself when it is one, else MODEL exported into `out` (as `hil export`)."""
    given = Path(args.model).expanduser()
    if args.model.endswith(".pte"):
        if not given.is_file():
            raise InputError(f"--model {args.model}: no such .pte file")
        return given.absolute()
    from hil.cli.export_cmd import export_program

    return export_program(args.model, str(out), args.delegate, args.export_timeout, quantize=args.quantize,
                          calibration=args.calibration)
