"""What `--hil-debug-outputs` costs on the QEMU runtime board, and the buffer sizes it runs with.

Two sides, in turns (one untimed run of each first, which also builds both images): `run_profile` of CPU-only
cifar10 with 1 iteration, and the same with debug outputs (the debug image's intermediate outputs copied into
its debug buffer, read out through GDB, and compared operator by operator with the ETRecord by ExecuTorch's
Inspector). Prints both medians, the ratio, the debug run's own steps, its ETDump and debug buffer sizes
(used / capacity) and what the .pte predicted for the debug buffer, with the load average.
Needs the pinned source workspace (RT700_SDK_DIR or `make rt700-sdk`'s default).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import interleaved, load_line  # noqa: E402

from hil.config.board_config import load_board_config  # noqa: E402
from hil.firmware.qemu_firmware import find_workspace  # noqa: E402
from hil.run.pipeline import RunRequest, run_profile  # noqa: E402

MODEL = "cifar10"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=3, help="interleaved pairs (after one untimed pair)")
    args = parser.parse_args()
    if find_workspace() is None:
        raise SystemExit("no source workspace: run `make rt700-sdk` (or set RT700_SDK_DIR)")
    board = load_board_config("qemu")
    root = Path(tempfile.mkdtemp(prefix="hil-bench-debug-"))
    results: dict[bool, dict] = {}

    def side(debug: bool):
        def run() -> None:
            result = run_profile(RunRequest(model=MODEL, board=board, out_dir=root / ("debug" if debug else "plain"),
                                            iterations=1, delegate="none", debug_outputs=debug),
                                 report=lambda _line: None)
            assert result.profile["firmware"] == "runtime", "the QEMU board did not run the runtime image"
            results[debug] = result.profile
        return run

    plain, debug = interleaved(side(False), side(True), args.repeats)
    mp, md = statistics.median(plain), statistics.median(debug)
    profile = results[True]
    memory = profile["memory"]["allocators"]
    buffer = profile["drift"]["debug_buffer"]
    steps = ", ".join(f"{name} {secs:.2f}" for name, secs in profile["harness_steps_s"].items())
    plain_steps = ", ".join(f"{name} {secs:.2f}" for name, secs in results[False]["harness_steps_s"].items())
    print(f"{MODEL} CPU-only on the QEMU runtime board, 1 iteration, {args.repeats} runs each, interleaved:")
    print(f"  hil run                 median {mp:7.2f} s")
    print(f"  hil run --debug-outputs median {md:7.2f} s   ratio {md / mp:.2f} (+{md - mp:.2f} s)")
    print(f"  plain run's steps (s): {plain_steps}")
    print(f"  debug run's steps (s): {steps}")
    print(f"  ETDump buffer: {memory['etdump_buffer']['used']} B used of {memory['etdump_buffer']['total']} B; "
          f"debug buffer: {memory['debug_buffer']['used']} B used of {memory['debug_buffer']['total']} B "
          f"(predicted from the .pte: {buffer['predicted_bytes']} B)")
    first = profile["drift"]["first_drift"]
    print(f"  first operator that drifts: {first['op'] if first else 'none'} "
          f"({len(profile['drift']['operators'])} operators compared)")
    print(f"  {load_line()}")


if __name__ == "__main__":
    main()
