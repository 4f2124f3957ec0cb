"""What one run costs on the emulated RT700 against the QEMU board, for the same model: `hil run --board rt700-emu`
(the RT700 bench image on unicorn behind pyocd server, gdbserver and gdb) against `hil run --board qemu` (the QEMU
runtime image under gdb), each a fresh `hil` process timed to its exit, in turns.

    RT700_SDK_DIR=... HIL_CACHE_DIR=... python bench/rt700_emu_vs_qemu.py [--model SPEC] [--iterations N] [--repeats R]

Both sides start from warm caches (the export, the QEMU runtime image and the RT700 image are built by one untimed
run of each first), so the figure is a run's cost as a nightly meets it once its images exist: start the target,
flash, run the iterations to the ETDump breakpoint, read the dump out, analyse it. The default model is the small
CNN the RT700 emulator's tests use (tests/fixtures/small_cnn.py), CPU only (the emulated RT700 has no NPU).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _common import interleaved, report, source_workspace  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
DEFAULT_MODEL = str(REPO / "tests" / "fixtures" / "small_cnn.py") + ":factory"


def _hil_run(board: str, model: str, iterations: int, out: Path) -> None:
    """One `hil run` on `board`, into a folder of its own; a failed run stops the bench with its last lines."""
    done = subprocess.run([sys.executable, "-m", "hil.cli.main", "run", "--board", board, "--model", model,
                           "--delegate", "none", "--iterations", str(iterations), "--out", str(out), "-q"],
                          cwd=REPO, capture_output=True, text=True, timeout=3600)
    if done.returncode != 0:
        raise SystemExit(f"hil run --board {board} failed ({done.returncode}): {done.stderr[-2000:]}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=DEFAULT_MODEL)
    parser.add_argument("--iterations", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    source_workspace()
    with tempfile.TemporaryDirectory(prefix="emu-vs-qemu-") as tmp:
        counter = iter(range(1_000_000))

        def side(board: str):
            return lambda: _hil_run(board, args.model, args.iterations, Path(tmp) / f"{board}-{next(counter)}")

        qemu, emu = interleaved(side("qemu"), side("rt700-emu"), args.repeats)
    report(f"hil run of {args.model}, {args.iterations} iteration(s), warm caches",
           "--board qemu (runtime image)", qemu, "--board rt700-emu (RT700 image)", emu)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
