"""The readers' full mutant round: every mutant of both seed runs (tests/unit/profile_mutants.py), where
`make test` takes every mutant of the Neutron run and every 5th of the CPU-only one
(tests/unit/test_readers_property.py). Prints the tally and its time; exits 1 when a finding is left.

    python bench/reader_mutants.py [--every N]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests" / "unit"), str(ROOT / "tests")]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--every", type=int, default=1, metavar="N", help="every N-th mutant of each seed (default all)")
    args = parser.parse_args()
    from profile_mutants import Round, Tally, mutants
    from reader_seeds import make_seeds

    with tempfile.TemporaryDirectory(prefix="reader-mutants-") as tmp:
        seeds = make_seeds(Path(tmp) / "seeds")
        tally, started = Tally(), time.monotonic()
        for name in ("npu", "cpu"):
            round_ = Round(name, seeds[name], Path(tmp))
            round_.run(mutants(round_.profile)[::args.every], tally)
        took = time.monotonic() - started
    print(f"{tally.mutants} mutants ({tally.number_changes} number changes) in {took:.1f} s, load average "
          f"{os.getloadavg()[0]:.1f}: {tally.refused} refused by at least one command, {tally.unread} number changes "
          "to fields a command does not read")
    findings = {"uncaught exceptions": tally.crashes, "refusals not one line naming the file": tally.bad_refusals,
                "baselines compare cannot read": tally.unreadable_baselines,
                "number changes accepted unnoticed": tally.unnoticed}
    for what, cases in findings.items():
        print(f"{len(cases)} {what}")
        for case in cases[:20]:
            print(f"  {case}")
    return 1 if any(findings.values()) else 0


if __name__ == "__main__":
    raise SystemExit(main())
