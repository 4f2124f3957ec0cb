"""`hil inspect`: the same analysis as a run, from an ETDump/ETRecord pair produced anywhere.

Files that a run folder keeps beside the ETDump (serial.log, model.pte, simulation.json) are used
when present, so `hil inspect` on a run folder gives the answer `hil run` gave.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from hil.analysis.console import parse_console
from hil.analysis.profile import TimeScale, build_profile
from hil.analysis.table import format_table
from hil.config import load_board_config
from hil.errors import HilError
from hil.inputs import finite_number
from hil.manifest import MANIFEST_NAME, read_manifest


def choose_time_scale(clock_mhz: float | None, board_config: Path | None) -> tuple[TimeScale, str]:
    """An explicit clock wins, then the board file's clock; with neither, ticks are the host runtime's ns.

    A clock that is not a positive, finite number is refused (InputError): 0 or nan gave nan times.
    """
    if clock_mhz is not None:
        return TimeScale.core_cycles(finite_number(clock_mhz, "--clock-mhz", above=0)), "clock"
    if board_config is not None:
        cfg = load_board_config(path=board_config)
        return TimeScale.core_cycles(cfg.clock_mhz), cfg.name
    return TimeScale.nanoseconds(), "unknown"


def inspect_files(args: argparse.Namespace) -> int:
    """Print the analysis of `args.etdump` against `args.etrecord`; HilErrors reach the CLI as one message."""
    etdump = Path(args.etdump)
    scale, board = choose_time_scale(args.clock_mhz, args.board_config)
    beside = etdump.parent
    serial_log = beside / "serial.log"
    pte = beside / "model.pte"
    console = parse_console(serial_log.read_text(errors="replace")) if serial_log.is_file() else None
    model = etdump.stem
    if (beside / MANIFEST_NAME).is_file():
        try:
            model = str(read_manifest(beside).get("model") or model)
        except HilError as exc:  # only the model's name comes from it: say so and go on
            print(f"hil inspect: {exc}; naming the model after the ETDump", file=sys.stderr)
    profile = build_profile(
        etdump,
        args.etrecord,
        board=board,
        model=model,
        simulated=(beside / "simulation.json").is_file(),
        time_scale=scale,
        console=console,
        pte_path=pte if pte.is_file() else None,
    )
    print(json.dumps(profile, indent=2) if args.json else format_table(profile))
    return 0
