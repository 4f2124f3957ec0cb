"""What the numerics check adds to a QEMU run's wall time (goal: at most 20%).

Runs `hil run --board qemu --model cifar10 --delegate none` in-process (run_profile, as the CLI does) with
the check on and off, interleaved (on, off, on, off, ...), each run a fresh QEMU boot on the cached runtime
image. The check's share is what the two sides differ by: the inputs written through GDB, the outputs read
back, the eager model and the host runtime run on the same inputs, the metrics. Wall time is the whole run
(export cache hit, image cache hit, flash, the inferences, the analysis). With 1 iteration the inference
is the smallest part of a run, so the relative overhead is the largest a user can see.

Prints the load average before and after: the wall times depend on what else the machine runs.
Needs the pinned source workspace (RT700_SDK_DIR or `make rt700-sdk`'s default).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from hil.config.board_config import load_board_config  # noqa: E402
from hil.run.pipeline import RunRequest, run_profile  # noqa: E402


def load() -> str:
    return " ".join(f"{v:.2f}" for v in os.getloadavg())


def one_run(out: Path, iterations: int, numerics: bool) -> tuple[float, float]:
    """Wall seconds of the whole run, and of its numerics step alone."""
    start = time.perf_counter()
    result = run_profile(RunRequest(model="cifar10", board=load_board_config("qemu"), out_dir=out,
                                    iterations=iterations, delegate="none", numerics=numerics),
                         report=lambda _line: None)
    wall = time.perf_counter() - start
    assert result.profile["firmware"] == "runtime", "the QEMU board did not run the runtime image"
    assert ("numerics" in result.profile) == numerics
    return wall, result.profile["harness_steps_s"].get("numerics", 0.0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--pairs", type=int, default=5, help="interleaved pairs of runs (check on, check off)")
    parser.add_argument("--iterations", type=int, default=1, help="inferences per run (default 1: the worst case)")
    args = parser.parse_args()
    print(f"load average before: {load()}")
    with tempfile.TemporaryDirectory(prefix="hil-numerics-bench-") as tmp:
        one_run(Path(tmp) / "warm", args.iterations, True)  # builds or finds the image; imports torch
        on, off, step = [], [], []
        for pair in range(args.pairs):
            wall, numerics_s = one_run(Path(tmp) / f"on{pair}", args.iterations, True)
            on.append(wall)
            step.append(numerics_s)
            off.append(one_run(Path(tmp) / f"off{pair}", args.iterations, False)[0])
            print(f"pair {pair + 1}: check on {on[-1]:.2f} s (numerics step {numerics_s:.2f} s), off {off[-1]:.2f} s")
    med_on, med_off = statistics.median(on), statistics.median(off)
    overhead = 100.0 * (med_on - med_off) / med_off
    print(f"load average after: {load()}")
    print(f"numerics check: {med_on:.2f} s vs {med_off:.2f} s without (median of {args.pairs} interleaved pairs, "
          f"{args.iterations} iteration(s)): +{overhead:.1f}% wall time (goal: at most 20%); "
          f"the numerics step alone {statistics.median(step):.2f} s")


if __name__ == "__main__":
    main()
