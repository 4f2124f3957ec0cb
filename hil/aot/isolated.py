"""A user's model exported in a child process with a deadline: the model cannot end or hang the run.

The child, its deadline and how its end is judged are hil.aot.child's (shared with the numerics
references, hil.aot.references): `sys.exit(0)`, `raise KeyboardInterrupt`, `os._exit`, a crash or a
loop that never returns in the model's code is a ModelError naming the model file (exit status 2).

The cache is the hand-over: the child exports into the same content-keyed cache the parent then
reads (hil.aot.export), so a hit never starts a child and never runs the model's code. The child
names the entry it made in its result: which entry depends on what the model read while it ran
(hil.aot.follow), and an entry that may not be cached (the model read a socket) is found no other
way. Built-in models are the harness's own code and a delegate registered only in this process is
unknown to a child: both export in-process, recorded the same way.
"""

from __future__ import annotations

import tempfile
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from hil.aot import export
from hil.aot.child import child_main as run_child_side
from hil.aot.child import run_in_child, where
from hil.aot.models import resolve_spec
from hil.base.defaults import DEFAULT_EXPORT_TIMEOUT_S
from hil.base.errors import HilError

WHAT = "the export"


def runs_in_child(spec: str, delegate: str) -> bool:
    """True for a user's model with a delegate a fresh process can load."""
    known = delegate == "none" or delegate in export.LAZY_LOWERING_MODULES
    return known and not resolve_spec(spec).builtin


def export_isolated(spec: str, *, delegate: str = "none", options: Mapping[str, Any] | None = None,
                    cache: Path | None = None, timeout_s: float = DEFAULT_EXPORT_TIMEOUT_S,
                    log_path: Path | None = None) -> export.CompiledModel:
    """`export.export_model`, with a user's model run in a child process ended after `timeout_s` s.

    `log_path` keeps the child's output (the model's prints, the framework's warnings).
    """
    if not runs_in_child(spec, delegate):
        return export.export_model(spec, delegate=delegate, cache=cache, options=options)
    hit, _ = export.cached_export(spec, delegate=delegate, options=options, cache=cache)
    if hit is not None:
        return hit
    with tempfile.TemporaryDirectory(prefix="hil-export-") as scratch:
        log = Path(log_path) if log_path is not None else Path(scratch) / "export.log"
        job = {"spec": spec, "delegate": delegate, "options": dict(options or {}),
               "cache": None if cache is None else str(cache)}
        outcome = run_in_child("hil.aot.isolated:child_main", job, spec=spec, what=WHAT,
                               label=f"export of {resolve_spec(spec).name}", timeout_s=timeout_s, log=log,
                               scratch=Path(scratch), trace_opens=True)
    made = Path(str(outcome.get("entry") or ""))
    entry = export.entry_at(made) if outcome.get("entry") else None
    if entry is None:
        raise HilError(f"the export of {where(spec)} reported success but left no complete cache entry ({made})")
    return replace(entry, cached=False)


def child_main(job_text: str) -> None:
    """The child: export, then report the entry it made (hil.aot.child writes how it ended)."""
    run_child_side(job_text, _export_job, WHAT)


def _export_job(job: dict[str, Any]) -> dict[str, Any]:
    made = export.export_model(job["spec"], delegate=job["delegate"], options=job["options"],
                               cache=None if job["cache"] is None else Path(job["cache"]))
    return {"entry": str(made.pte_path.parent)}
