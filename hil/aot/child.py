"""Run a piece of a user's model's code in a child process with a deadline: the one spawn, wait and outcome
both the export (hil.aot.isolated) and the numerics references (hil.aot.references) go through.

Why a child: a model file's top level, its factory and its forward are arbitrary code. In the harness's
own process `sys.exit(0)` in them ended `hil run` with status 0 and no profile, `os._exit(0)` left no
manifest, `raise KeyboardInterrupt` looked like the user pressing Ctrl-C, a fork left a copy of `hil`
running, 100 MB of prints went onto hil's stdout (breaking `--json`) and a loop that never returns was
never timed out. In a child, any of these is the model's fault and a ModelError naming the model file
(exit status 2): the child reports how it ended in a result file (`child_main`), and a child that ends
without one (`os._exit`, a crash) or runs past the deadline is reported as such. The child is the
leader of its own process group, and the whole group is ended with it (hil.target.process), so what the
model's code started dies too; its output is appended to the run's export.log.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from hil.aot import native_trace
from hil.aot.models import resolve_spec
from hil.base import atomic
from hil.base.errors import HilError, ModelError, TimeoutExpired
from hil.target.process import ManagedProcess
from hil.target.spawner import START_TIMEOUT_S

# Lines of the child's log quoted when it ends without a result.
LOG_TAIL_LINES = 5
_TAIL_BYTES = 64 * 1024
_ROOT = str(Path(__file__).resolve().parents[2])  # the folder holding the `hil` package


def where(spec: str) -> str:
    """The model as a message names it: its spec and its file."""
    return f"model '{spec}' ({resolve_spec(spec).source_files[0]})"


def run_in_child(entry: str, job: Mapping[str, Any], *, spec: str, what: str, label: str, timeout_s: float,
                 log: Path, scratch: Path, trace_opens: bool = False) -> dict[str, Any]:
    """Run `entry` ("module:function", called with the job's JSON) in a child ended after `timeout_s` s
    (its start included); return the outcome it reported (`ok` true). A ModelError naming `what` ("the
    export") and the model file when it failed, ended without a result or ran past the deadline.

    `scratch` holds the result file; `log` gets the child's stdout and stderr, appended. With `trace_opens` the
    child runs under strace, so its recording follows reads by native code too (hil.aot.native_trace)."""
    module, function = entry.split(":")
    result = Path(scratch) / "result.json"
    argv = [sys.executable, "-P", "-c", f"import sys; sys.path.insert(0, sys.argv[1]); from {module} import "
            f"{function}; {function}(sys.argv[2])", _ROOT, json.dumps({**job, "result": str(result)})]
    env = {native_trace.TRACE_ENV: ""}  # never a trace inherited from this process's own parent
    if trace_opens:
        argv, given = native_trace.traced_argv(argv, Path(scratch) / "opens.trace")
        env.update(given)
    model = where(spec)
    begin = time.monotonic()  # the deadline covers the start too
    child = ManagedProcess(argv, label, log, env).start(timeout=min(START_TIMEOUT_S, timeout_s))
    try:
        status = child.wait(max(0.0, timeout_s - (time.monotonic() - begin)))
    except TimeoutExpired:
        child.close(grace=0.5)
        raise ModelError(f"{what} of {model} did not finish within {timeout_s:g} s (--export-timeout);"
                         f" the model's code was stopped (log: {log})") from None
    finally:
        child.close(grace=0.5)  # its whole process group: whatever the model's code started ends here
    outcome = _read_outcome(result)
    if outcome is None:
        raise ModelError(f"{what} of {model} ended without a result ({_describe_status(status)});"
                         f" last lines of its log ({log}):{_tail(log, label)}")
    if not outcome.get("ok"):
        raise ModelError(str(outcome.get("message") or f"{what} of {model} failed (log: {log})"))
    return outcome


def child_main(job_text: str, work: Callable[[dict[str, Any]], dict[str, Any]], what: str) -> None:
    """The child's side: run `work(job)`, then write how it ended to the job's result file, whatever the
    model's code did, and end without the interpreter's teardown."""
    from hil.base.quiet import quiet_third_party

    quiet_third_party()
    job = json.loads(job_text)
    try:
        outcome: dict[str, Any] = {**work(job), "ok": True}
    except HilError as exc:
        outcome = {"ok": False, "message": str(exc)}
    except BaseException as exc:  # noqa: BLE001  (SystemExit, KeyboardInterrupt: the model's code did it)
        outcome = {"ok": False, "message": f"{what} of {where(job['spec'])} raised {_name(exc)}"
                                           " (a model file must return its model, never exit or interrupt)"}
    try:
        atomic.write_json(Path(job["result"]), outcome)
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)  # no interpreter teardown: nothing the model left behind (threads, atexit) runs


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


def _tail(log: Path, label: str) -> str:
    try:
        with open(log, "rb") as handle:  # its end only: a model that printed 100 MB is not read back whole
            handle.seek(max(0, handle.seek(0, os.SEEK_END) - _TAIL_BYTES))
            text = handle.read().decode("utf-8", errors="replace")
    except OSError:
        return " (none)"
    lines = [line for line in text.splitlines() if line.strip()]
    shown = [line for line in lines if not line.startswith(("$ ", f"[{label}"))][-LOG_TAIL_LINES:]
    return "".join(f"\n  {line}" for line in shown) or " (empty)"


def _name(exc: BaseException) -> str:
    text = str(exc)
    return f"{type(exc).__name__}({text})" if text else type(exc).__name__
