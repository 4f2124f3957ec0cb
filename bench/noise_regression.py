"""The regression verdict under real noise: false alarms and detections on the host runtime, this machine.

30 runs of an unchanged CPU-only CifarNet and 10 runs of the same network with one convolution 12.5%
wider, timed for real by the host ExecuTorch runtime (nanoseconds, whatever else the machine is doing),
in the order a nightly would meet them: 10 runs first, then (unchanged, unchanged, wider) x 10. Every
run after the first is judged against the previous (up to 10) unchanged runs, as `--hil-history` with
`--hil-baseline-runs 10` does; a suspected regression, or a run slowed as a whole, gets `--confirm`
re-runs (default 2) made on the spot, as `--hil-confirm 2` does. Printed: false alarms among the 29
comparisons of unchanged runs, and how often the wider convolution was caught and named first, with
and without confirmation.

`--load-jobs N` keeps N busy processes running beside the runs (another job's compilers or test
workers on the same cores); `--load-duty F` makes each busy for a share F of the time, in bursts of
20-400 ms, as a test suite is. With N equal to the number of cores and F = 1 every run is stretched
by time slicing all along, and the verdict should say "not judged" rather than cry wolf.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from _common import load_line  # noqa: E402
from hil.aot.export import CompiledModel, export_model, load_inputs  # noqa: E402
from hil.analysis.profile import TimeScale, build_profile  # noqa: E402
from hil.replay.host_runtime import host_etdump  # noqa: E402
from hil.regress.compare import Comparison, compare_runs  # noqa: E402
from hil.regress.stats import drop_warmup  # noqa: E402
from hil.target.spawner import spawn  # noqa: E402

TARGET = "cpu_op:native_call_convolution.out#2"  # the third convolution: the one made wider
# A busy process: bursts of 20-400 ms busy, idle long enough between them to be busy a share `duty` of the time.
_BURSTS = """import random, time
while True:
    busy = random.uniform(0.02, 0.4)
    end = time.monotonic() + busy
    while time.monotonic() < end:
        pass
    time.sleep(busy * (1 - {duty}) / {duty})
"""


def run_once(compiled: CompiledModel, iterations: int, work: Path) -> dict:
    """One run: load, `iterations` + 1 inferences on the host runtime, profile, first one dropped."""
    dump = work / "trace.etdump"
    dump.write_bytes(host_etdump(compiled.pte_path.read_bytes(), load_inputs(compiled), iterations + 1))
    profile = build_profile(dump, compiled.etrecord_path, board="host", model=compiled.name, simulated=False,
                            time_scale=TimeScale.nanoseconds())
    return drop_warmup(profile, 1)


def judged(history: list[dict], first: dict, again: callable, confirm: int, runs: int) -> tuple[Comparison, Comparison]:
    """The verdict on `first` alone and after confirmation re-runs (made only when needed)."""
    baseline = history[-runs:]
    alone = compare_runs(baseline, [first])
    if not (alone.needs_confirmation and confirm):
        return alone, alone
    return alone, compare_runs(baseline, [first, *(again() for _ in range(confirm))])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--iterations", type=int, default=10)
    parser.add_argument("--confirm", type=int, default=2)
    parser.add_argument("--baseline-runs", type=int, default=10, metavar="K",
                        help="earlier unchanged runs each run is judged against (default 10; 3 to 8: the rank test "
                             "cannot reach alpha with one run, and the within-run spread decides)")
    parser.add_argument("--load-jobs", type=int, default=0, metavar="N", help="busy processes run beside (default 0)")
    parser.add_argument("--load-duty", type=float, default=1.0, metavar="F", help="share of time each is busy (default 1)")
    args = parser.parse_args()
    # Started with the parent-death signal, so an interrupted bench leaves no busy process behind.
    job = _BURSTS.format(duty=min(max(args.load_duty, 0.01), 1.0))
    load = [spawn([sys.executable, "-c", job], stdin=subprocess.DEVNULL) for _ in range(args.load_jobs)]
    try:
        measure(args)
    finally:
        for job in load:
            job.kill()
            job.wait(timeout=10)


def measure(args: argparse.Namespace) -> None:
    """Run the nightly sequence and print the tallies (see the module docstring)."""
    models = {name: export_model(f"{HERE / 'noise_models.py'}:{name}", delegate="none") for name in ("narrow", "wide")}
    order = ["narrow"] * 10 + ["narrow", "narrow", "wide"] * 10
    history: list[dict] = []
    tally = {"alarm": [0, 0], "caught": [0, 0], "disturbed": [0, 0], "wide": 0, "same": 0}
    with tempfile.TemporaryDirectory(prefix="hil-noise-") as tmp:
        work = Path(tmp)
        for step, name in enumerate(order):
            again = lambda name=name: run_once(models[name], args.iterations, work)  # noqa: E731
            profile = again()
            if history:
                verdicts = judged(history, profile, again, args.confirm, args.baseline_runs)
                first = [c.regressions[0].key if c.regressions else "-" for c in verdicts]
                for i, c in enumerate(verdicts):
                    tally["disturbed"][i] += c.disturbed
                    if name == "wide":
                        tally["caught"][i] += first[i] == TARGET
                    else:
                        tally["alarm"][i] += c.has_regression
                tally["wide" if name == "wide" else "same"] += 1
                print(f"run {step + 1:2d} {name:6s} vs {len(history[-args.baseline_runs:]):2d} runs: "
                      f"alone {'REGRESSION ' + first[0] if verdicts[0].has_regression else 'ok'}"
                      f"{' (disturbed)' if verdicts[0].disturbed else ''}; confirmed "
                      f"{'REGRESSION ' + first[1] if verdicts[1].has_regression else 'ok'}", flush=True)
            if name == "narrow":
                history.append(profile)
    print(f"beside {args.load_jobs} busy process(es), each busy {100 * args.load_duty:.0f}% of the time:" if args.load_jobs
          else "beside no busy process of the bench's own (only what else the machine runs):")
    for i, label in enumerate(("one run", f"with {args.confirm} confirmation re-run(s)")):
        print(f"{label}: false alarms {tally['alarm'][i]} of {tally['same']} comparisons of unchanged runs; "
              f"wider convolution caught and named first {tally['caught'][i]} of {tally['wide']}; "
              f"runs not judged (machine load) {tally['disturbed'][i]}")
    print(load_line())


if __name__ == "__main__":
    main()
