"""What a history database (pytest --hil-history) must hold before `hil report` or the gate reads it.

SQLite stores any value in any column, and a JSON column can hold any text, so the rows are checked
as the JSON files are: each value the readers use (hil.report.html, hil.regress.history) has the
type they expect, each JSON column decodes to the object it was written as, and a refusal names the
database, the run (its row id) and the column. The file itself must be an SQLite database holding
et-hil's two tables: an empty or foreign file is refused before SQLite could turn it into a new,
empty database.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hil.base.errors import FileContentError
from hil.records.validate.fields import Fields, at, describe
from hil.records.validate.profile import check_event, check_time_scale

# The first 16 bytes of every SQLite 3 database file (sqlite.org/fileformat.html, "The Database Header").
SQLITE_HEADER = b"SQLite format 3\x00"
# The columns the readers use, per table.
TABLES = {
    "runs": ("id", "time", "board", "model", "git_commit", "simulated", "iterations", "total_us", "npu_fraction",
             "totals", "memory", "versions", "passed", "artifacts", "comparison"),
    "events": ("run_id", "seq", "key", "kind", "name", "op_types", "delegate_debug_id", "n", "p50_us", "p90_us",
               "min_us", "max_us", "mad_us", "mean_us"),
}
JSON_OBJECTS = ("versions", "totals", "memory", "time_scale", "numerics")
VERDICTS = ("regression", "improvement", "cannot judge")


def check_header(head: bytes, path: Path | str) -> None:
    """The file's first bytes say it is an SQLite 3 database."""
    if head[:len(SQLITE_HEADER)] == SQLITE_HEADER:
        return
    what = "an empty file" if not head else f"it starts with {head[:16]!r}"
    raise FileContentError(f"history database {path}: not an SQLite database ({what}); "
                           "it is written by pytest --hil-history")


def check_tables(columns: dict[str, set[str]], path: Path | str) -> None:
    """`columns` (per table, as PRAGMA table_info lists them) hold every column the readers use."""
    for table, needed in TABLES.items():
        if not columns.get(table):
            raise FileContentError(f"history database {path}: no table '{table}': not an et-hil history database")
        missing = [name for name in needed if name not in columns[table]]
        if missing:
            raise FileContentError(f"history database {path}: table '{table}' has no column {', '.join(missing)}")


def check_run_row(row: dict[str, Any], path: Path | str) -> dict[str, Any]:
    """One row of `runs` with its JSON columns decoded (NULL or empty: {}; `comparison` NULL: None)."""
    fields = Fields(f"history database {path}, run {describe(row.get('id'))}")
    fields.whole(row.get("id"), "id", optional=False)
    for key in ("time", "board", "model"):
        fields.text(row.get(key), key, optional=False)
    for key in ("git_commit", "artifacts", "time_base", "firmware_kind", "not_judged"):  # the last three: later columns
        fields.text(row.get(key), key)
    for key in ("passed", "simulated", "iterations", "commit_dirty", "judged"):
        fields.whole(row.get(key), key, optional=key != "passed")
    for key in ("total_us", "npu_fraction"):
        fields.number(row.get(key), key, at_least=0)
    decoded = dict(row)
    for key in JSON_OBJECTS:
        decoded[key] = fields.mapping(_json(fields, row.get(key), key), key)
    fields.entries(decoded["totals"], "totals", fields.a_number_or_null)
    check_time_scale(fields, decoded["time_scale"], "time_scale")
    comparison = _json(fields, row.get("comparison"), "comparison")
    decoded["comparison"] = _comparison(fields, comparison) if comparison else None
    return decoded


def check_event_row(row: dict[str, Any], path: Path | str) -> dict[str, Any]:
    """One row of `events` with `op_types` (and the user's `modules` and `sources`) decoded: an event as a
    profile holds it (statistics, no times)."""
    fields = Fields(f"history database {path}, run {describe(row.get('run_id'))}")
    key = fields.text(row.get("key"), f"event {describe(row.get('seq'))}.key", optional=False)
    where = f"event {key}"
    decoded = dict(row, op_types=_json(fields, row.get("op_types"), at(where, "op_types")) or [])
    # later columns (hil.regress.history): absent or NULL in rows written before them
    for places, column in (("modules", "module_paths"), ("sources", "source_lines")):
        value = _json(fields, decoded.pop(column, None), at(where, column))
        if value:
            decoded[places] = value
    check_event(fields, decoded, where)
    return decoded


def _json(fields: Fields, value: Any, where: str) -> Any:
    """A JSON column decoded; NULL and the empty text are None."""
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        fields.wrong(value, where, "JSON text")
    try:
        return json.loads(value)
    except (ValueError, RecursionError) as exc:
        fields.refuse(where, f"is not JSON ({str(exc)[:80]})")


def _comparison(fields: Fields, value: Any) -> dict[str, Any]:
    """The comparison the gate stored with a run (hil.regress.compare.comparison_to_dict + its decision)."""
    stored = fields.mapping(value, "comparison")
    decision = fields.mapping(stored.get("decision"), "comparison.decision")
    for key in ("status", "reason"):
        fields.text(decision.get(key), at("comparison.decision", key))
    fields.flag(stored.get("has_regression"), "comparison.has_regression")
    fields.text(stored.get("baseline"), "comparison.baseline")
    fields.items(stored.get("events"), "comparison.events", lambda e, name: _verdict(fields, e, name))
    return stored


def _verdict(fields: Fields, value: Any, where: str) -> None:
    event = fields.mapping(value, where, optional=False)
    verdict = fields.text(event.get("verdict"), at(where, "verdict"))
    if verdict in VERDICTS:  # the rows the report's tables show
        for key in ("name", "kind", "op_types"):
            fields.text(event.get(key), at(where, key), optional=False)
    for key in ("baseline_us", "now_us", "change_pct"):
        fields.number(event.get(key), at(where, key))
