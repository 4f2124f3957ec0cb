"""A user's model exported in a child process with a deadline: the model cannot end or hang the run.

Why: a factory (or the model file's top level) is arbitrary code. In the harness's own process
`sys.exit(0)` in it ended `hil run` with status 0 and no profile, `raise KeyboardInterrupt` looked
like the user pressing Ctrl-C, and a loop that never returns was never timed out. In a child, any
of these is the model's fault and a ModelError naming the model file (exit status 2): the child
reports how the export ended in a result file, and a child that ends without one (`os._exit`, a
crash) or runs past the deadline (then ended with its whole process group) is reported as such.

The cache is the hand-over: the child exports into the same content-keyed cache the parent then
reads (hil.aot.export), so a hit never starts a child and never runs the model's code. The child
names the entry it made in its result: which entry depends on what the model read while it ran
(hil.aot.follow), and an entry that may not be cached (the model read a socket) is found no other
way. Built-in models are the harness's own code and a delegate registered only in this process is
unknown to a child: both export in-process, recorded the same way.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import tempfile
import time
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from hil.base import atomic
from hil.aot import export
from hil.aot.models import resolve_spec
from hil.base.defaults import DEFAULT_EXPORT_TIMEOUT_S
from hil.base.errors import HilError, ModelError, TimeoutExpired
from hil.target.process import ManagedProcess
from hil.target.spawner import START_TIMEOUT_S

# Lines of the child's log quoted when it ends without a result.
LOG_TAIL_LINES = 5
_ROOT = str(Path(__file__).resolve().parents[2])  # the folder holding the `hil` package


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
    name = resolve_spec(spec).name
    where = _where(spec)
    with tempfile.TemporaryDirectory(prefix="hil-export-") as scratch:
        result = Path(scratch) / "result.json"
        log = Path(log_path) if log_path is not None else Path(scratch) / "export.log"
        job = {"spec": spec, "delegate": delegate, "options": dict(options or {}),
               "cache": None if cache is None else str(cache), "result": str(result)}
        argv = [sys.executable, "-P", "-c", "import sys; sys.path.insert(0, sys.argv[1]); "
                "from hil.aot.isolated import child_main; child_main(sys.argv[2])", _ROOT, json.dumps(job)]
        begin = time.monotonic()  # the deadline covers the start too
        child = ManagedProcess(argv, f"export of {name}", log).start(timeout=min(START_TIMEOUT_S, timeout_s))
        try:
            status = child.wait(max(0.0, timeout_s - (time.monotonic() - begin)))
        except TimeoutExpired:
            child.close(grace=0.5)
            raise ModelError(f"the export of {where} did not finish within {timeout_s:g} s (--export-timeout);"
                             f" the model's code was stopped (log: {log})") from None
        finally:
            child.close(grace=0.5)
        outcome = _read_outcome(result)
        if outcome is None:
            raise ModelError(f"the export of {where} ended without a result ({_describe_status(status)});"
                             f" last lines of its log ({log}):{_tail(log)}")
    if not outcome.get("ok"):
        raise ModelError(str(outcome.get("message") or f"the export of {where} failed (log: {log})"))
    made = Path(str(outcome.get("entry") or ""))
    entry = export.entry_at(made) if outcome.get("entry") else None
    if entry is None:
        raise HilError(f"the export of {where} reported success but left no complete cache entry ({made})")
    return replace(entry, cached=False)


def _where(spec: str) -> str:
    resolved = resolve_spec(spec)
    return f"model '{spec}' ({resolved.source_files[0]})"


def _read_outcome(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text("utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _describe_status(status: int | None) -> str:
    if status is None:
        return "exit status unknown"
    if status < 0:
        try:
            return f"killed by {signal.Signals(-status).name}"
        except ValueError:
            return f"killed by signal {-status}"
    return f"exit status {status}"


def _tail(log: Path) -> str:
    try:
        lines = [line for line in log.read_text("utf-8", errors="replace").splitlines() if line.strip()]
    except OSError:
        return " (none)"
    shown = [line for line in lines if not line.startswith(("$ ", "[export of "))][-LOG_TAIL_LINES:]
    return "".join(f"\n  {line}" for line in shown) or " (empty)"


def child_main(job_text: str) -> None:
    """The child: export, then write how it ended to the result file, whatever the model did."""
    from hil.base.quiet import quiet_third_party

    quiet_third_party()
    job = json.loads(job_text)
    spec = job["spec"]
    try:
        made = export.export_model(spec, delegate=job["delegate"], options=job["options"],
                                   cache=None if job["cache"] is None else Path(job["cache"]))
        outcome: dict[str, Any] = {"ok": True, "entry": str(made.pte_path.parent)}
    except HilError as exc:
        outcome = {"ok": False, "message": str(exc)}
    except BaseException as exc:  # noqa: BLE001  (SystemExit, KeyboardInterrupt: the model's code did it)
        outcome = {"ok": False, "message": f"the export of {_where(spec)} raised {_name(exc)}"
                                           " (a model file must return its model, never exit or interrupt)"}
    try:
        atomic.write_json(Path(job["result"]), outcome)
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)  # no interpreter teardown: nothing the model left behind (threads, atexit) runs


def _name(exc: BaseException) -> str:
    text = str(exc)
    return f"{type(exc).__name__}({text})" if text else type(exc).__name__
