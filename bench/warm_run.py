"""A warm `hil run` (cached export, 1 iteration, QEMU board) against a bare process importing what it needs.

The bare side is `python -c "import executorch.devtools, executorch.exir"`: the imports a run cannot
avoid (the Inspector, and the program's dialects). The two take turns (bare, hil, bare, ...), each a
fresh process timed from start to exit, after one untimed `hil run` that fills the export and image
caches. Printed: both medians, the ratio, what the run adds over its imports (goal: at most 1 s), the
run's own steps (from its manifest.json, median over the runs) with what falls outside them, and the
imports of one more run of each side by package (`-X importtime`, cumulative, top-level modules).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _common import load_line  # noqa: E402

REPO = HERE.parent
BARE = "import executorch.devtools, executorch.exir"
TIMEOUT_S = 600


def hil_argv(out: Path, model: str, delegate: str | None = None) -> list[str]:
    """`hil run` as a user runs it, from this checkout (`python -m hil.cli.main` with the repository first on the path)."""
    return [sys.executable, "-m", "hil.cli.main", "run", "--board", "qemu", "--model", model, "--out", str(out),
            "--iterations", "1", "-q", *(("--delegate", delegate) if delegate else ())]


def env() -> dict[str, str]:
    """This checkout first on the path, and bytecode cached as an installed package has it (the untimed
    first run writes it), whatever PYTHONDONTWRITEBYTECODE the shell has."""
    return {**{k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}, "PYTHONPATH": str(REPO)}


def _children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed(argv: list[str]) -> tuple[float, float, str]:
    """Wall and CPU seconds (user + system, its children included) of one process run to its exit, and its output."""
    cpu, start = _children_cpu_s(), time.perf_counter()
    done = subprocess.run(argv, capture_output=True, cwd=REPO, env=env(), timeout=TIMEOUT_S, text=True)
    if done.returncode != 0:
        sys.exit(f"{' '.join(argv)} failed (status {done.returncode}):\n{done.stderr[-3000:]}")
    return time.perf_counter() - start, _children_cpu_s() - cpu, done.stdout


def imports_by_package(argv: list[str]) -> dict[str, float]:
    """Seconds of import per top-level package in one run of `argv` (`-X importtime`, cumulative)."""
    done = subprocess.run([argv[0], "-X", "importtime", *argv[1:]], capture_output=True, text=True, cwd=REPO,
                          env=env(), timeout=TIMEOUT_S, check=True)
    totals: dict[str, float] = defaultdict(float)
    for line in done.stderr.splitlines():
        if not line.startswith("import time:") or "self [us]" in line:
            continue
        _self, cumulative, name = line.split(":", 1)[1].split("|")
        if name.startswith(" ") and not name.startswith("  "):  # depth 0: one space after the bar
            totals[name.strip().split(".")[0]] += int(cumulative) / 1e6
    return dict(totals)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--model", default="cifar10")
    parser.add_argument("--delegate", default=None,
                        help="e.g. none: the CPU-only run, whose numerics check compares with eager PyTorch and the "
                             "host runtime (from the export's cache entry when warm)")
    parser.add_argument("--bare", default=BARE, help=f"the bare side's import statement (default: {BARE})")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="hil-warm-run-") as tmp:
        out = Path(tmp) / "run"
        bare_timed = f"import time; t = time.perf_counter(); {args.bare}; print(time.perf_counter() - t)"
        bare_argv, run_argv = [sys.executable, "-c", bare_timed], hil_argv(out, args.model, args.delegate)
        timed(run_argv)  # fills the caches
        bare, runs, statement, cpu, steps = [], [], [], defaultdict(list), defaultdict(list)
        for _ in range(args.repeats):
            for side, argv, walls in (("bare", bare_argv, bare), ("hil run", run_argv, runs)):
                wall, used, printed = timed(argv)
                walls.append(wall)
                cpu[side].append(used)
                if side == "bare":
                    statement.append(float(printed.split()[-1]))
            for name, seconds in json.loads((out / "manifest.json").read_text())["steps_s"].items():
                steps[name].append(seconds)
            steps["(outside the steps: start, artifacts, exit)"].append(
                runs[-1] - sum(v[-1] for k, v in steps.items() if not k.startswith("(")))
        imports = {"bare": imports_by_package(bare_argv), "hil run": imports_by_package(run_argv)}
    b, r = statistics.median(bare), statistics.median(runs)
    shown = f" --delegate {args.delegate}" if args.delegate else ""
    print(f"warm `hil run --model {args.model}{shown} --iterations 1` on the QEMU board against a bare `{args.bare}`")
    print(f"  bare imports              median {b:6.2f} s wall, {statistics.median(cpu['bare']):6.2f} s CPU "
          f"({len(bare)} runs, interleaved)")
    print(f"  hil run                   median {r:6.2f} s wall, {statistics.median(cpu['hil run']):6.2f} s CPU "
          f"({len(runs)} runs, interleaved; CPU includes QEMU and gdb)")
    i = statistics.median(statement)
    print(f"  ratio hil run / bare: {r / b:.2f}; the run adds {r - b:+.2f} s over the bare process (goal: <= 1 s), "
          f"{r - i:+.2f} s over its import statement alone ({i:.2f} s: no start-up, no exit)")
    print("  the run's steps, median s:  " + ", ".join(f"{k} {statistics.median(v):.2f}" for k, v in steps.items()))
    for side, packages in imports.items():
        top = sorted(packages.items(), key=lambda kv: -kv[1])[:6]
        print(f"  imports of one {side} by package, s: " + ", ".join(f"{k} {v:.2f}" for k, v in top))
    print(f"  {load_line()}")


if __name__ == "__main__":
    main()
