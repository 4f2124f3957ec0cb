"""Mutants of a sealed run folder's profile.json and manifest.json and of a history's cells, each with the verdict
the test knows it must get, for tests/unit/test_figures_verified.py.

The oracle is the mutant against the original, never the product: a profile.json whose bytes changed must be
refused (its sha256 is not the manifest's, both computed here with hashlib); a manifest.json that parses to
another JSON value must be refused, one that parses to the same value (whitespace, key order) must give the
output of the original; a history cell that reads back as another value (or type) must get its run named (or
the history refused in one line), one that reads back the same must give the same report and baseline.
"""

from __future__ import annotations

import json
import random
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from profile_mutants import mutants

# Field mutants sampled evenly, byte mutants beside them: every one of these differs from the original bytes.
FIELD_MUTANTS = 200
BYTE_MUTANTS = 40


def _evenly(items: list[Any], count: int) -> list[Any]:
    step = max(1, len(items) // count)
    return items[::step][:count]


def json_mutants(original: bytes) -> Iterator[tuple[str, bytes]]:
    """(label, bytes) of a JSON file: fields deleted, retyped, renumbered; bytes flipped and cut; reformatted."""
    doc = json.loads(original)
    for mutant in _evenly(mutants(doc), FIELD_MUTANTS):
        yield mutant.label, json.dumps(mutant.apply(doc)).encode()
    rng = random.Random(43)
    for index in range(BYTE_MUTANTS):
        at = rng.randrange(len(original))
        blob = bytearray(original)
        if index % 4 == 3:
            del blob[at:]
            yield f"cut at byte {at}", bytes(blob)
        else:
            blob[at] ^= 1 << rng.randrange(8)
            yield f"bit flipped in byte {at}", bytes(blob)
    yield "indented", json.dumps(doc, indent=1).encode()
    yield "keys sorted", json.dumps(doc, sort_keys=True).encode()
    yield "one line", json.dumps(doc, separators=(",", ":")).encode()


def same_json(a: bytes, b: bytes) -> bool:
    """Whether two files hold the same JSON value (NaN compared as text, as json writes it)."""
    try:
        return json.dumps(json.loads(a), sort_keys=True) == json.dumps(json.loads(b), sort_keys=True)
    except ValueError:
        return False


# --- history cells ----------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Cell:
    """One cell of the history and the value written over it."""

    table: str
    rowid: int
    column: str
    value: Any
    run_id: int  # the run the cell belongs to (an event's run)

    @property
    def label(self) -> str:
        return f"{self.table} row {self.rowid} {self.column} := {self.value!r}"


def _others(value: Any) -> list[Any]:
    """Values that differ from `value` (or only in type): another number, text, NULL, a blob."""
    if isinstance(value, bool) or isinstance(value, int):
        return [value + 1, str(value), None]
    if isinstance(value, float):
        return [value * 1.5 + 0.5, value + 1e-9 * max(1.0, abs(value)), str(value), None]
    if isinstance(value, str):
        flipped = value[:-1] + chr(ord(value[-1]) ^ 1) if value else "x"
        return [flipped, value + " ", None, 7]
    return ["x", 7] if value is None else [None]


def cell_mutants(db: Path, count: int) -> list[Cell]:
    """`count` cells of `db` (every table and column), each with one other value, drawn with a fixed seed."""
    conn = sqlite3.connect(db)
    try:
        found = []
        for table, owner in (("runs", "id"), ("events", "run_id")):
            for row in conn.execute(f"SELECT rowid, {owner}, * FROM {table}").fetchall():
                columns = [d[0] for d in conn.execute(f"SELECT * FROM {table} LIMIT 0").description]
                for column, value in zip(columns, row[2:]):
                    found += [Cell(table, row[0], column, other, row[1]) for other in _others(value)]
    finally:
        conn.close()
    return random.Random(43).sample(found, count)


def apply_cell(source: Path, target: Path, cell: Cell) -> bool:
    """`source` copied to `target` with `cell` written; whether the cell now reads back otherwise than before."""
    target.write_bytes(source.read_bytes())
    conn = sqlite3.connect(target, isolation_level=None)
    try:
        where = f"SELECT {cell.column} FROM {cell.table} WHERE rowid = ?"
        before = conn.execute(where, (cell.rowid,)).fetchone()[0]
        try:
            conn.execute(f"UPDATE {cell.table} SET {cell.column} = ? WHERE rowid = ?", (cell.value, cell.rowid))
        except sqlite3.DatabaseError:  # NOT NULL, a duplicate key, a text rowid: the cell stays as it was
            return False
        rowid = cell.value if (cell.table, cell.column) == ("runs", "id") and isinstance(cell.value, int) else cell.rowid
        after = conn.execute(where, (rowid,)).fetchone()
    finally:
        conn.close()
    return after is None or (type(after[0]), after[0]) != (type(before), before)
