"""What the QEMU runtime board costs: the runtime build, a model's image, a cached image, one inference.

- runtime build: ExecuTorch's libraries for the emulated Cortex-M33 plus cifar10's image, into an empty
  cache (the first `make test` or `hil run` on a machine), with the executorch wheel's flatc;
- a new model's image on that runtime (only the model's kernels, registration and the application);
- the same model again (a cache hit: nothing is built);
- one CPU-only cifar10 inference under `-icount shift=2,sleep=off`: the `run` step of `hil run` with 6
  iterations minus the same with 1, over 5, runs of the two interleaved (the 1-iteration side is the
  best a user can do for one inference: everything but the inferences is the same on both sides).

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

from _common import source_workspace  # noqa: E402

from hil.aot.export import export_model  # noqa: E402
from hil.config.board_config import load_board_config  # noqa: E402
from hil.firmware.runtime_image import RuntimeSources, build_runtime_image, wheel_flatc  # noqa: E402
from hil.run.pipeline import RunRequest, run_profile  # noqa: E402

SMALL = f"{Path(__file__).resolve().parent.parent / 'tests' / 'fixtures' / 'small_cnn.py'}:factory"


def load() -> str:
    return " ".join(f"{v:.2f}" for v in os.getloadavg())


def seconds(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def run_step(iterations: int, out: Path) -> float:
    result = run_profile(RunRequest(model="cifar10", board=load_board_config("qemu"), out_dir=out,
                                    iterations=iterations, delegate="none"), report=lambda _line: None)
    assert result.profile["firmware"] == "runtime", "the QEMU board did not run the runtime image"
    return result.profile["harness_steps_s"]["run"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=3, help="interleaved pairs for the inference time")
    args = parser.parse_args()
    workspace = source_workspace()
    sources, flatc = RuntimeSources.from_workspace(workspace), wheel_flatc()
    print(f"load average at start {load()}; {os.cpu_count()} cores; compile jobs = cores")
    cifar, small = export_model("cifar10", delegate="none"), export_model(SMALL, delegate="none")
    with tempfile.TemporaryDirectory(prefix="hil-runtime-bench-") as tmp:
        cache = Path(tmp)
        cold = seconds(lambda: build_runtime_image(cifar.pte_path, sources, flatc=flatc, cache=cache))
        new = seconds(lambda: build_runtime_image(small.pte_path, sources, flatc=flatc, cache=cache))
        hit = seconds(lambda: build_runtime_image(small.pte_path, sources, flatc=flatc, cache=cache))
    print(f"runtime libraries + cifar10 image, empty cache: {cold:7.1f} s")
    print(f"a new model's image on that runtime:           {new:7.1f} s")
    print(f"the same model again (cache hit):              {hit:7.3f} s")
    one, six = [], []
    with tempfile.TemporaryDirectory(prefix="hil-runtime-run-") as tmp:
        for i in range(args.repeats):
            one.append(run_step(1, Path(tmp) / f"one{i}"))
            six.append(run_step(6, Path(tmp) / f"six{i}"))
    per = [(b - a) / 5 for a, b in zip(one, six)]
    print(f"one CPU-only cifar10 inference (-O2 kernels, -icount shift=2,sleep=off): median {statistics.median(per):.2f} s "
          f"wall (of {', '.join(f'{p:.2f}' for p in per)}); a whole 1-iteration run step {statistics.median(one):.2f} s")
    print(f"load average at end {load()}")


if __name__ == "__main__":
    main()
