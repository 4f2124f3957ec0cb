"""CLI sub-commands of the regression side: `hil compare`, `hil baseline update`, `hil report`, `hil trace`.

Each is a thin wrapper over one library call; errors are HilErrors, which `hil.cli.main.main` prints
as one line with its exit status (hil.cli.main: 1 regression, 2 input error, 3 infrastructure).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from hil.regress.compare import DEFAULT_ALPHA, DEFAULT_MIN_SHARE, DEFAULT_NOISE_K, DEFAULT_TOLERANCE, parse_tolerance
from hil.regress.option_values import check_options

if TYPE_CHECKING:
    from hil.regress.runs import LoadedRun
    from hil.regress.timebase import TimeBase


def _cmd_compare(args: argparse.Namespace) -> int:
    from hil.base.errors import AnalysisError
    from hil.regress.compare import compare_runs, comparison_to_dict, format_comparison
    from hil.regress.gate import FAIL, decide
    from hil.regress.runs import load_run
    from hil.regress.stats import drop_warmup

    check_options({"tolerance": args.tolerance, "noise-k": args.noise_k, "min-delta-us": args.min_delta_us,
                   "min-share": args.min_share, "alpha": args.alpha, "warmup": args.warmup, "limit": args.limit})
    if len(args.runs) < 2:
        raise AnalysisError("give at least two runs: the baseline run(s), then the run to judge")
    *before, after = [load_run(path) for path in args.runs]
    for earlier in before:
        mismatch = _different_programs(earlier, after)
        if mismatch:
            print(f"hil compare: {mismatch}; a comparison would say nothing (compare runs of one model on one board)",
                  file=sys.stderr)
            return 2
    base, said = _time_bases(before, after)
    if said is not None:
        print(f"hil compare: {said}", file=sys.stderr)
        if base is None:
            return 2
    comparison = compare_runs(
        [drop_warmup(run.profile, args.warmup) for run in before], [drop_warmup(after.profile, args.warmup)],
        tolerance=args.tolerance, noise_k=args.noise_k, min_delta_us=args.min_delta_us, min_share=args.min_share,
        alpha=args.alpha,
    )
    decision = decide(comparison, strict=args.strict)
    if args.json:
        print(json.dumps({**comparison_to_dict(comparison), "time_base": base.key,
                          "decision": {"status": decision.status, "failed": decision.failed, "reason": decision.reason}},
                         indent=2))
    else:
        print("A: " + ", ".join(run.label for run in before) + f"\nB: {after.label}\ntime base: {base.describe()}")
        print(format_comparison(comparison, limit=args.limit))
        print(decision.reason + (" (a failure: --strict)" if decision.failed and decision.status != FAIL else ""))
    return 1 if decision.failed else 0


def _different_programs(a: "LoadedRun", b: "LoadedRun") -> str | None:
    """Why two runs are not runs of one model on one board (naming both files), or None when they are."""
    for key, mine, theirs in (("model", a.profile.model, b.profile.model), ("board", a.profile.board, b.profile.board)):
        if mine != theirs:
            return f"A ({a.label}) is {key} {mine!r}, B ({b.label}) is {key} {theirs!r}"
    return None


def _time_bases(before: list["LoadedRun"], after: "LoadedRun") -> tuple["TimeBase | None", str | None]:
    """B's time base and what to say about A's: runs of two known, different bases are refused (None, why);
    a run whose base nobody knows is compared, said on stderr (the user named these files)."""
    from hil.regress.baseline import baseline_time_base

    mine = baseline_time_base(after)
    unknown = [run.label for run in [*before, after] if not baseline_time_base(run).known]
    for earlier in before:
        theirs = baseline_time_base(earlier)
        if theirs.known and mine.known and not theirs.matches(mine):
            return None, (f"A ({earlier.label}) counts {theirs.describe()}, B ({after.label}) counts {mine.describe()}: "
                          "runs of two time bases are not comparable")
    if unknown:
        return mine, (f"warning: the time base of {', '.join(unknown)} is unknown (written before time bases were "
                      "kept?): compared as if both sides counted the same thing")
    return mine, None


def _cmd_baseline_update(args: argparse.Namespace) -> int:
    from hil.regress.baseline import baseline_time_base, write_baseline
    from hil.regress.runs import load_run
    from hil.regress.stats import drop_warmup

    check_options({"warmup": args.warmup})
    run = load_run(args.run)
    run.profile = drop_warmup(run.profile, args.warmup)
    path = write_baseline(run, args.out)
    print(f"baseline of {run.profile.model} on {run.profile.board} ({baseline_time_base(run).key}) written to {path}")
    return 0


def _cmd_report(args: argparse.Namespace) -> int:
    from hil.report.html import write_report_noting

    path, damaged = write_report_noting(args.db, args.out)
    for line in damaged:  # a damaged row is named and left out; the rest is drawn
        print(f"hil report: warning: {line}", file=sys.stderr)
    print(f"report written to {path}")
    return 0


def _cmd_trace(args: argparse.Namespace) -> int:
    from hil.report.trace import write_trace_json

    print(f"trace written to {write_trace_json(args.run)} (open it in ui.perfetto.dev or chrome://tracing)")
    return 0


def _add_judging_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--tolerance", type=parse_tolerance, default=DEFAULT_TOLERANCE, metavar="T",
                        help="relative slowdown allowed: 5, 5%% or 0.05 (default 5%%)")
    parser.add_argument("--noise-k", type=float, default=DEFAULT_NOISE_K, metavar="K",
                        help="sigmas of combined run noise a change must exceed (default 3)")
    parser.add_argument("--min-delta-us", type=float, default=0.0, metavar="US", help="absolute change below which nothing is judged")
    parser.add_argument("--min-share", type=float, default=DEFAULT_MIN_SHARE, metavar="F",
                        help="minimum effect: share of Method::execute a change must add (default 0.001)")
    parser.add_argument("--alpha", type=float, default=DEFAULT_ALPHA, metavar="P",
                        help="p-value of the rank test at or below which a slowdown counts (3+ baseline runs; default 0.1)")
    parser.add_argument("--warmup", type=int, default=0, metavar="W", help="drop the first W iterations of each run first")


def add_regression_commands(sub: argparse._SubParsersAction) -> None:
    """Register the regression sub-commands on the `hil` parser."""
    compare = sub.add_parser("compare", help="judge a run against baseline run(s) (folders or profile.json); exit 1 on regression")
    compare.add_argument("runs", type=Path, nargs="+", metavar="RUN",
                         help="the baseline run(s) (folder, profile.json or baseline JSON), then the run to judge")
    _add_judging_options(compare)
    compare.add_argument("--limit", type=int, default=10, metavar="N", help="rows of each table (default 10)")
    compare.add_argument("--json", action="store_true", help="print every event's verdict as JSON")
    compare.add_argument("--strict", action="store_true", help="exit 1 also when the runs cannot be judged")
    compare.set_defaults(func=_cmd_compare)

    baseline = sub.add_parser("baseline", help="manage baselines")
    baseline_sub = baseline.add_subparsers(dest="baseline_command", required=True)
    update = baseline_sub.add_parser("update", help="write a run as its model's baseline, with provenance")
    update.add_argument("run", type=Path, metavar="RUN", help="run folder or profile.json")
    update.add_argument("--out", type=Path, required=True, metavar="PATH", help="baseline folder (one <model>.json each) or a .json file")
    update.add_argument("--warmup", type=int, default=0, metavar="W", help="drop the first W iterations first")
    update.set_defaults(func=_cmd_baseline_update)

    report = sub.add_parser("report", help="write the HTML report of a history database")
    report.add_argument("db", type=Path, metavar="DB", help="SQLite history written by pytest --hil-history")
    report.add_argument("--out", type=Path, default=Path("report.html"), metavar="FILE", help="HTML file to write (default report.html)")
    report.set_defaults(func=_cmd_report)

    trace = sub.add_parser("trace", help="write trace.json (Chrome/Perfetto) into a run folder")
    trace.add_argument("run", type=Path, metavar="RUN", help="run folder with profile.json (and serial.log)")
    trace.set_defaults(func=_cmd_trace)
