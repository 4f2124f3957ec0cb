"""The emulated RT700's instruction counting: instructions per second with the native block hook against the
uncounted run (no hook) and the Python block hook, on the same RT700 image from reset to hil_etdump_ready.

    python bench/rt700_emu_cost.py --elf IMAGE_DIR/hil_rt700.elf [--repeats 3]

IMAGE_DIR is what `hil rt700-image --model cifar10 --delegate none --out IMAGE_DIR` built. The three sides run in
turns (native, none, python, native, ...), each on a fresh core; the instruction count is the native run's (the
uncounted run executes the same program, its CYCCNT reads aside). The whole `hil run` cost of --board rt700-emu
against --board qemu is bench/rt700_emu_vs_qemu.py's.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _common import load_line  # noqa: E402

from hil.emu.direct_run import load_core, run_to, symbol_address  # noqa: E402

SIDES = ("native", "none", "python")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--elf", type=Path, required=True)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    ready = symbol_address(args.elf, "hil_etdump_ready")
    times: dict[str, list[float]] = {side: [] for side in SIDES}
    executed = 0
    for _ in range(args.repeats):
        for side in SIDES:
            core = load_core(args.elf, side)
            times[side].append(run_to(core, ready, 1800))
            if side == "native":
                executed = core.executed
    print(f"{args.elf}: {executed:,} instructions from reset to hil_etdump_ready")
    median = {side: statistics.median(values) for side, values in times.items()}
    for side in SIDES:
        print(f"  {side:<7} median {median[side]:8.2f} s  {executed / median[side] / 1e6:7.1f} M instructions/s"
              f"  ({args.repeats} runs, interleaved)")
    print(f"  native / uncounted time: {median['native'] / median['none']:.2f}x;"
          f" Python hook / native time: {median['python'] / median['native']:.2f}x")
    print(f"  {load_line()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
