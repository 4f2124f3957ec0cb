"""The round of issue 43, point 3: 243 mutants of a sealed run folder's profile.json and of its manifest.json, and 220
cells of its history, each through every command that reads it (`hil compare` either side, `hil trace`, `hil inspect
RUN`, the gate, `hil report`), each with the verdict the test knows it must get (tests/unit/figure_mutants.py): zero
silent differences. About 25 s of CPU (85-100 s wall at load 7): in CHECK_SLOW, so `make test` runs it, not `make
check`. The single cases: tests/unit/test_figures_verified.py.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import sqlite3
from pathlib import Path

from figure_mutants import apply_cell, cell_mutants, json_mutants, same_json
from profile_mutants import hil
from test_figures_verified import _copy, seeds, sha256  # noqa: F401  (seeds: the fixture)

from hil.base.errors import HilError


class Round:
    """Counts per (file, command) of refused, named, identical and silent outcomes; silent ones listed."""

    def __init__(self) -> None:
        self.counts: dict[str, dict[str, int]] = {}
        self.silent: list[str] = []

    def add(self, key: str, outcome: str, label: str) -> None:
        bucket = self.counts.setdefault(key, {"refused": 0, "named": 0, "identical": 0, "silent": 0})
        bucket[outcome] += 1
        if outcome == "silent":
            self.silent.append(f"{key}: {label}")


def _one_line(seen: tuple[int, str, str], code: int, command: str, path: Path) -> bool:
    got, out, err = seen
    return (got, out) == (code, "") and len(err.splitlines()) == 1 and err.startswith(f"hil {command}: {path}")


def _profile_round(seeds: dict[str, Path], tmp_path: Path, found: Round) -> None:
    from hil.regress.judge import JudgeOptions, judge_run

    good = seeds["npu"]
    folder = _copy(good, tmp_path / "profile-round")
    profile, manifest = folder / "profile.json", folder / "manifest.json"
    original, recorded = profile.read_bytes(), sha256(profile)
    db = tmp_path / "gate.db"
    shutil.copyfile(seeds["history.db"], db)
    before = db.read_bytes()
    for label, data in json_mutants(original):
        assert data != original, label
        profile.write_bytes(data)
        line = (f"{profile}: sha256 {hashlib.sha256(data).hexdigest()} differs from the {recorded} {manifest} records: "
                "the file changed after the run")
        for key, argv, code in (("compare A-B", ("compare", good, folder), 2), ("compare B-A", ("compare", folder, good), 2),
                                ("trace", ("trace", folder), 2), ("inspect", ("inspect", folder, "--json"), 3)):
            refused = hil(*argv) == (code, "", f"hil {argv[0]}: {line}\n")
            found.add(f"profile.json x {key}", "refused" if refused else "silent", label)
        try:
            judge_run(folder, JudgeOptions(history=db), marker_budget=None, test_passed=True)
            outcome = "silent"
        except HilError as exc:
            outcome = "refused" if str(exc) == line and db.read_bytes() == before else "silent"
        found.add("profile.json x gate (and the report of its history)", outcome, label)


def _manifest_round(seeds: dict[str, Path], tmp_path: Path, found: Round) -> None:
    good = seeds["npu"]
    folder = _copy(good, tmp_path / "manifest-round")
    path = folder / "manifest.json"
    original = path.read_bytes()
    inspected = json.loads(hil("inspect", folder, "--json")[1])
    compared = hil("compare", good, folder)
    assert compared[0] == 0, compared
    for label, data in json_mutants(original):
        path.write_bytes(data)
        same = same_json(data, original)
        seen = hil("inspect", folder, "--json")
        if same:
            outcome = "identical" if seen[0] == 0 and json.loads(seen[1]) == inspected and not seen[2] else "silent"
        else:
            outcome = "refused" if _one_line(seen, 2, "inspect", path) else "silent"
        found.add("manifest.json x inspect", outcome, label)
        seen = hil("compare", good, folder)
        if same:
            outcome = "identical" if seen == compared else "silent"
        else:
            outcome = "refused" if _one_line(seen, 2, "compare", path) else "silent"
        found.add("manifest.json x compare", outcome, label)


def _baselines(db: Path) -> dict[str, object]:
    """What the gate would take from `db` for each series it holds: row ids, profiles, damaged rows named."""
    from hil.regress import history
    from hil.regress.timebase import TimeBase

    conn = sqlite3.connect(db)
    series = conn.execute("SELECT DISTINCT model, time_base FROM runs WHERE passed = 1").fetchall()
    conn.close()
    taken = {}
    for model, base in series:
        recent = history.recent_runs(db, model, "qemu", TimeBase.parse(base), 10)
        taken[model] = (recent.ids, [p.to_json() for p in recent.profiles], recent.damaged)
    return taken


def _page(html: Path) -> str:
    return re.sub(r"generated [^<]*", "", html.read_text())


def _history_round(seeds: dict[str, Path], tmp_path: Path, found: Round, count: int) -> None:
    seed, db, html = seeds["history.db"], tmp_path / "round.db", tmp_path / "round.html"
    shutil.copyfile(seed, db)
    assert hil("report", db, "--out", html)[0] == 0
    page, taken = _page(html), _baselines(db)
    for cell in cell_mutants(seed, count):
        changed = apply_cell(seed, db, cell)
        owner = cell.value if (cell.table, cell.column) == ("runs", "id") and changed else cell.run_id
        named = f"history database {db}, run {owner} ("
        seen = hil("report", db, "--out", html)
        warnings = seen[2].splitlines()
        if not changed:
            outcome = "identical" if seen[0] == 0 and not warnings and _page(html) == page else "silent"
        elif _one_line(seen, 2, "report", db):
            outcome = "refused"
        else:
            outcome = "named" if seen[0] == 0 and any(w.startswith(f"hil report: warning: {named}") for w in warnings) \
                else "silent"
        found.add("history row x report", outcome, cell.label)
        try:
            now = _baselines(db)
        except HilError as exc:
            found.add("history row x gate", "refused" if str(db) in str(exc) and changed else "silent", cell.label)
            continue
        if not changed:
            outcome = "identical" if now == taken else "silent"
        else:
            outcome = "named" if all(any(d.startswith(named) for d in damaged) for _, _, damaged in now.values()) \
                else "silent"
        found.add("history row x gate", outcome, cell.label)


def test_a_round_of_mutants_of_each_file_through_each_command_leaves_no_silent_difference(seeds, tmp_path):
    """243 mutants of profile.json (200 field changes, 40 flipped bits and cuts, 3 reformattings) into `hil compare`
    (either side), `hil trace`, `hil inspect RUN` and the gate; the same of manifest.json into `hil inspect RUN` and
    `hil compare`; 220 history cells into `hil report` and the gate's baseline. Each outcome is refused in one line,
    named and left out (history rows), or identical to the original's where the mutant holds the same JSON value or
    cell: zero silent differences. Prints the counts (run with -s to see them)."""
    found = Round()
    _profile_round(seeds, tmp_path, found)
    _manifest_round(seeds, tmp_path, found)
    _history_round(seeds, tmp_path, found, 220)
    print("\nfigures verified, mutants per file and command:")
    for key, counts in found.counts.items():
        print(f"  {key}: {sum(counts.values())} mutants, " + ", ".join(f"{n} {what}" for what, n in counts.items()))
    assert all(sum(counts.values()) >= 200 for counts in found.counts.values()), found.counts
    assert found.silent == [], found.silent[:20]
