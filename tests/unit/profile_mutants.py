"""Profile mutants, enumerated rather than drawn: every field of a profile (at any depth) deleted and given
each other JSON type, and every number changed, for tests/unit/test_readers_property.py and
bench/reader_mutants.py.

A "number change" replaces a finite number by another finite number at least 0.25 away (or, for a
whole number, by another whole number), far past any rounding the readers allow (hil.analysis.
stored_figures: at most a few thousandths of a microsecond; the NPU fraction, a few millionths), so a
reader that accepts the change must show it. Type swaps, deletions and NaN must only be used or
refused in one line, never a traceback.
"""

from __future__ import annotations

import contextlib
import copy
import io
import json
import math
import re
import shutil
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

Path_ = tuple[str | int, ...]
# One value of each JSON type, and a number JSON has no word for (Python's json writes it NaN).
OF_TYPE: dict[str, Any] = {"null": None, "bool": True, "number": 7, "string": "7", "list": [7], "object": {"7": 7}}
NUMBER_CHANGE = "other number"
DELETION = "delete"
NOT_A_NUMBER = "nan"


def json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    return "list" if isinstance(value, list) else "object"


@dataclass(frozen=True)
class Mutant:
    """One change to one field: `kind` a JSON type's name (the field given a value of that type),
    DELETION, NOT_A_NUMBER or NUMBER_CHANGE."""

    path: Path_
    kind: str
    value: Any = None

    def apply(self, doc: dict[str, Any]) -> dict[str, Any]:
        changed = copy.deepcopy(doc)
        parent = changed
        for key in self.path[:-1]:
            parent = parent[key]
        if self.kind == DELETION:
            del parent[self.path[-1]]
        else:
            parent[self.path[-1]] = copy.deepcopy(self.value)
        return changed

    @property
    def where(self) -> str:
        """The field as the readers' messages name it: `events[3].times_us[0]`."""
        return "".join(f"[{k}]" if isinstance(k, int) else f".{k}" for k in self.path).lstrip(".")

    @property
    def label(self) -> str:
        return f"{self.where} {self.kind} {self.value!r}" if self.kind != DELETION else f"{self.where} deleted"


def fields(value: Any, path: Path_ = ()) -> Iterator[tuple[Path_, Any]]:
    """Every field under `value` (object members and list items, at any depth) with its path."""
    children = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, child in children:
        yield (*path, key), child
        yield from fields(child, (*path, key))


def number_changes(value: int | float) -> list[int | float]:
    """Other finite numbers for `value`: larger, smaller (negative for a 0) and another scale."""
    if isinstance(value, int):
        return [value + 1, value - 1 if value > 0 else value + 2, value * 3 + 5]
    return [round(value + 1.0, 6), round(value - 0.25, 6), round(value * 1.5 + 0.5, 6)]


def mutants(doc: dict[str, Any]) -> list[Mutant]:
    """Every mutant of `doc`: per field, deleted and each other type; per number, NaN and number changes."""
    found = []
    for path, value in fields(doc):
        kind = json_type(value)
        found.append(Mutant(path, DELETION))
        found += [Mutant(path, other, sample) for other, sample in OF_TYPE.items() if other != kind]
        if kind == "number":
            found.append(Mutant(path, NOT_A_NUMBER, math.nan))
            found += [Mutant(path, NUMBER_CHANGE, v) for v in number_changes(value)]
    return found


# --- running the regression side's readers on each mutant ---------------------------------------------------

COMMANDS = ("trace", "compare A-B", "compare B-A", "baseline update")
# Numbers `hil compare` and `hil trace` never read, so a change to one cannot show in their output (and
# `hil baseline update`, which copies every number, shows each): the program's sizes, load times and console
# facts (the table and `hil inspect` show those), an event's metadata and ids (events are matched by kind, name
# and occurrence, hil.regress.identity; an instruction id groups a delegate call's events only for the
# delegate overhead, which is checked), single call overheads (only their median and totals are figures, both
# checked), the runs a method left out, and the NPU clock of a program without a delegate (its time base has
# none, hil.regress.timebase). `hil trace` reads no clock at all: its times are microseconds already.
UNREAD_BY_COMPARE = ("memory.*", "load_us.*", "console.*", "events[].metadata.*", "events[].delegate_debug_id",
                     "events[].instruction_id", "events[].call_overhead_us[]", "methods.*.left_out_runs",
                     "time_scale.neutron_ticks_per_us")
UNREAD = {"trace": (*UNREAD_BY_COMPARE, "time_scale.*"), "compare A-B": UNREAD_BY_COMPARE,
          "compare B-A": UNREAD_BY_COMPARE, "baseline update": ()}


def unread(command: str, mutant: Mutant) -> bool:
    """Whether `command` never reads the field `mutant` changes (list indices written `[]`)."""
    where = re.sub(r"\[\d+\]", "[]", mutant.where)
    return any(re.fullmatch(re.escape(pattern).replace(r"\*", ".*"), where) for pattern in UNREAD[command])


@dataclass(frozen=True)
class Outcome:
    """What a user sees of one command: exit status, both streams, and the file it wrote (a baseline without
    its `created_at`, the one figure that differs between two writes of one run)."""

    code: int
    out: str
    err: str
    written: str | None = None


def hil(*argv: object) -> tuple[int, str, str]:
    """`hil ARGV` through the CLI's own entry, in this process: (exit status, stdout, stderr)."""
    from hil.cli.main import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main([str(a) for a in argv])
        except SystemExit as exc:  # argparse's own usage errors
            code = exc.code
    return int(code), out.getvalue(), err.getvalue()


@dataclass
class Tally:
    """A round's findings: each a line naming the seed, command and mutant."""

    mutants: int = 0
    number_changes: int = 0
    refused: int = 0
    crashes: list[str] = field(default_factory=list)
    unnoticed: list[str] = field(default_factory=list)  # a number change a reader of it accepted, output unchanged
    unread: int = 0  # number changes to fields the command does not read (UNREAD), output unchanged
    bad_refusals: list[str] = field(default_factory=list)  # not one line naming the file
    unreadable_baselines: list[str] = field(default_factory=list)  # written by baseline update, refused by compare


class Round:
    """The commands on copies of one good run folder (`good`), its profile.json replaced by each mutant."""

    def __init__(self, name: str, good: Path, scratch: Path) -> None:
        self.name, self.good, self.scratch = name, good, scratch
        self.folder = scratch / f"{name}-run"
        shutil.rmtree(self.folder, ignore_errors=True)
        shutil.copytree(good, self.folder)
        self.profile = json.loads((good / "profile.json").read_text())
        self.reference = {command: self.outcome(command) for command in COMMANDS}
        assert all(o.code == 0 for o in self.reference.values()), self.reference

    def outcome(self, command: str) -> Outcome:
        folder, out = self.folder, self.scratch / f"{self.name}-baselines"
        if command == "trace":
            (folder / "trace.json").unlink(missing_ok=True)
            code, stdout, stderr = hil("trace", folder)
            trace = folder / "trace.json"
            return Outcome(code, stdout, stderr, trace.read_text() if trace.exists() else None)
        if command == "compare A-B":
            return Outcome(*hil("compare", self.good, folder))
        if command == "compare B-A":
            return Outcome(*hil("compare", folder, self.good))
        shutil.rmtree(out, ignore_errors=True)
        code, stdout, stderr = hil("baseline", "update", folder, "--out", out)
        written = sorted(out.glob("*.json")) if out.is_dir() else []
        if not written:
            return Outcome(code, stdout, stderr)
        baseline = json.loads(written[0].read_text())
        baseline["provenance"].pop("created_at", None)
        return Outcome(code, stdout, stderr, f"{written[0].name} {json.dumps(baseline)}")

    def run(self, mutants: list[Mutant], tally: Tally) -> None:
        profile_json = self.folder / "profile.json"
        for mutant in mutants:
            profile_json.write_text(json.dumps(mutant.apply(self.profile)))
            tally.mutants += 1
            tally.number_changes += mutant.kind == NUMBER_CHANGE
            refused = False
            for command in COMMANDS:
                case = f"{self.name}: hil {command}, {mutant.label}"
                try:
                    seen = self.outcome(command)
                except Exception as exc:  # noqa: BLE001 (what is counted: any exception a user would see)
                    tally.crashes.append(f"{case}: {type(exc).__name__}: {exc}")
                    continue
                if seen.code not in (0, 1):
                    refused = True
                    self._check_refusal(seen, command, case, tally)
                elif command == "baseline update":
                    self._check_baseline_reads(case, tally)
                if mutant.kind == NUMBER_CHANGE and seen == self.reference[command]:
                    if unread(command, mutant):
                        tally.unread += 1
                    else:
                        tally.unnoticed.append(case)
            tally.refused += refused

    def _check_refusal(self, seen: Outcome, command: str, case: str, tally: Tally) -> None:
        lines = seen.err.splitlines()
        name = command.split(" ")[0] if command != "baseline update" else "baseline"
        if (seen.code != 2 or len(lines) != 1 or not lines[0].startswith(f"hil {name}: ")
                or str(self.folder) not in lines[0] or "Traceback" in seen.err):
            tally.bad_refusals.append(f"{case}: exit {seen.code}: {seen.err.strip()[:300]}")

    def _check_baseline_reads(self, case: str, tally: Tally) -> None:
        """What `hil baseline update` accepted, `hil compare` reads (it used to crash on it ever after)."""
        written = sorted((self.scratch / f"{self.name}-baselines").glob("*.json"))
        for baseline in written:
            code, _, err = hil("compare", baseline, self.good)
            if code not in (0, 1, 2) or (code == 2 and "time bases are not comparable" not in err
                                         and "a comparison would say nothing" not in err):
                tally.unreadable_baselines.append(f"{case}: compare exit {code}: {err.strip()[:300]}")
