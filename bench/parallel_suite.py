"""Nightly throughput: the device tests on the QEMU board, serially and with `pytest -n 2`, in one run.

Both sides run the same tests (tests/device: the built-in models, CPU-only and simulated Neutron) in
fresh pytest sessions with the same warm caches (a first, untimed session fills the AOT and image
caches, so neither side pays for exporting). Each side runs `--repeats` times, alternating, and the
medians are compared: the ratio is serial / parallel, the speed-up two emulated boards side by side
give a nightly run. Needs pytest-xdist (pinned in pyproject.toml).
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SESSION_TIMEOUT_S = 1800


def _children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def session(artifacts: Path, workers: int | None, tests: str, extra: list[str]) -> tuple[float, int, float]:
    """Wall seconds of one `pytest --board qemu TESTS` session, how many tests passed, and the CPU seconds it
    used (all its processes); fails loudly when a test fails."""
    argv = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--board", "qemu",
            "--hil-artifacts", str(artifacts), *extra, tests]
    if workers:
        argv[3:3] = ["-n", str(workers)]
    cpu_before, start = _children_cpu_s(), time.perf_counter()
    done = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, timeout=SESSION_TIMEOUT_S,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    took = time.perf_counter() - start
    passed = re.search(r"(\d+) passed", done.stdout)
    if done.returncode != 0 or passed is None:
        sys.exit(f"pytest {'-n ' + str(workers) if workers else 'serial'} failed:\n{done.stdout[-3000:]}{done.stderr[-2000:]}")
    return took, int(passed.group(1)), _children_cpu_s() - cpu_before


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=1, help="timed sessions per side (alternating)")
    parser.add_argument("--workers", type=int, default=2, help="pytest-xdist workers for the parallel side")
    parser.add_argument("--tests", default="tests/device", help="what to run (default: the device tests)")
    parser.add_argument("--pytest-args", default="", help="more pytest options for both sides, e.g. '--hil-iterations 20'")
    args = parser.parse_args()
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="hil-bench-") as tmp:
        root = Path(tmp)
        print(f"warming the caches: one untimed serial session of {args.tests} ...", flush=True)
        extra = shlex.split(args.pytest_args)
        session(root / "warm", None, args.tests, extra)
        serial: list[float] = []
        parallel: list[float] = []
        cpu: dict[str, list[float]] = {"serial": [], "parallel": []}
        for i in range(args.repeats):
            took, n_serial, used = session(root / f"serial{i}", None, args.tests, extra)
            serial.append(took)
            cpu["serial"].append(used)
            took, n_parallel, used = session(root / f"parallel{i}", args.workers, args.tests, extra)
            parallel.append(took)
            cpu["parallel"].append(used)
            if n_serial != n_parallel:
                sys.exit(f"the two sides ran different tests: {n_serial} vs {n_parallel} passed")
    s, p = statistics.median(serial), statistics.median(parallel)
    print(f"{args.tests} {args.pytest_args} on the QEMU board ({n_serial} tests, {os.cpu_count()} cores), "
          f"median of {args.repeats}:")
    print(f"  serial                    {s:8.1f} s wall, {statistics.median(cpu['serial']):6.1f} s CPU")
    print(f"  pytest -n {args.workers:<16d}{p:8.1f} s wall, {statistics.median(cpu['parallel']):6.1f} s CPU")
    print(f"  speed-up serial / -n {args.workers}: {s / p:.2f}x")
    # Other work on the machine takes the cores the second worker needs: say how busy it was.
    print(f"  machine load (1-min average) before / after: {load_before:.1f} / {os.getloadavg()[0]:.1f} "
          f"on {os.cpu_count()} cores; the speed-up shrinks when other processes load the cores")


if __name__ == "__main__":
    main()
