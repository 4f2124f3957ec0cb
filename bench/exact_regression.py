"""The regression verdict on exact counts: the QEMU runtime board, where every run boots the real firmware.

The host-runtime bench (noise_regression.py) judges nanoseconds that machine load reaches. Here each
run is `hil run --board qemu` on the runtime image: ExecuTorch's portable kernels on the emulated
Cortex-M33 under `-icount`, so a run's ticks are its instruction counts and two boots of one program
read the same numbers. The nightly sequence is the host bench's: 10 runs of CifarNet, then
(unchanged, unchanged, conv3 12.5% wider) x 10, each run judged against the previous (up to 10)
unchanged runs. Then 10 runs of a two-convolution network and one with its second convolution 1% wider
(100 -> 101 output channels), judged with `--tolerance` (default 0.5%: with no noise to allow for, a
tolerance below the change a user must see).

Printed: false alarms among the 29 unchanged comparisons, the wider conv3 caught and named first, the
1% convolution caught and named first, the spread of the unchanged runs' Method::execute, and the load
average. Needs the pinned source workspace (RT700_SDK_DIR or `make rt700-sdk`'s default).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from hil.config.board_config import load_board_config  # noqa: E402
from hil.run.pipeline import RunRequest, run_profile  # noqa: E402
from hil.regress.compare import compare_runs, parse_tolerance  # noqa: E402

WIDE_TARGET = "cpu_op:native_call_convolution.out#2"  # CifarNet's third convolution
PLUS1_TARGET = "cpu_op:native_call_convolution.out#1"  # the two-conv network's second convolution


def run_once(model: str, iterations: int, out: Path) -> dict:
    board = load_board_config("qemu")
    result = run_profile(RunRequest(model=f"{HERE / 'exact_models.py'}:{model}", board=board, out_dir=out,
                                    iterations=iterations, delegate="none"), report=lambda _line: None)
    if result.profile.get("firmware") != "runtime":
        raise SystemExit("the QEMU board did not run the runtime image: is the source workspace there (make rt700-sdk)?")
    return result.profile


def first_regression(baseline: list[dict], now: dict, tolerance: float) -> str:
    verdict = compare_runs(baseline[-10:], [now], tolerance=tolerance)
    return verdict.regressions[0].key if verdict.regressions else "-"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--iterations", type=int, default=5)
    parser.add_argument("--tolerance", type=parse_tolerance, default=0.005)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="hil-exact-") as tmp:
        work = Path(tmp)
        history: list[dict] = []
        alarms = caught = same = wide = 0
        for step, name in enumerate(["narrow"] * 10 + ["narrow", "narrow", "wide"] * 10):
            profile = run_once(name, args.iterations, work / f"run{step}")
            if history:
                first = first_regression(history, profile, args.tolerance)
                if name == "wide":
                    wide += 1
                    caught += first == WIDE_TARGET
                else:
                    same += 1
                    alarms += first != "-"
                print(f"run {step + 1:2d} {name:6s}: {first}", flush=True)
            if name == "narrow":
                history.append(profile)
        spread = [p["totals_us"]["method_execute"] for p in history]
        small: list[dict] = []
        plus1_caught = plus1_runs = 0
        for step, name in enumerate(["base"] * 10 + ["plus1"] * 10):
            profile = run_once(name, args.iterations, work / f"small{step}")
            if name == "base":
                small.append(profile)
                continue
            plus1_runs += 1
            plus1_caught += first_regression(small, profile, args.tolerance) == PLUS1_TARGET
    print(f"load average {' '.join(f'{v:.2f}' for v in os.getloadavg())}; QEMU runtime board, "
          f"{args.iterations} iterations a run, tolerance {100 * args.tolerance:g}%")
    print(f"false alarms {alarms} of {same} comparisons of unchanged CifarNet runs "
          f"(Method::execute of the {len(spread)} unchanged runs: {min(spread):.3f} to {max(spread):.3f} us, "
          f"stdev {statistics.pstdev(spread):.3f})")
    print(f"conv3 12.5% wider caught and named first {caught} of {wide}")
    print(f"second convolution 1% wider caught and named first {plus1_caught} of {plus1_runs}")


if __name__ == "__main__":
    main()
