"""pytest options and hooks of the regression side (budgets, baselines, history, reports).

Registered as the `hil_regress` pytest11 entry point (hil.regress.pytest_regress re-exports it) beside
the main plugin. It does not wrap the pipeline: after each test's call phase it finds the runs the test
made (the run folders the main plugin keeps in the test's stash, `hil_artifacts` user properties a test
recorded itself, plus any run folder written under the test's artifacts folder during the call, so
failed runs count too), publishes what each shows (trace.json, JUnit key figures: hil.report) and
judges each one with `hil.regress.judge`, which never publishes. A broken budget or a regression turns
the test's report into a failure whose message holds the measured values, the limits and the artifact
folder.

    pytest --board qemu --hil-baseline baselines/qemu --hil-history history.db --junitxml=out.xml
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from pathlib import Path
from typing import Any

import pytest

from hil.base import atomic
from hil.base.errors import HilError, InputError
from hil.base.paths import BUDGETS_DIR
from hil.plugin.hooks import RUN_FOLDERS, uses_et_hil
from hil.regress import junit, unjudged
from hil.regress.budgets import Budget, budget_from_mapping, check_budget, format_violations
from hil.regress.compare import DEFAULT_NOISE_K, parse_tolerance
from hil.regress.judge import JudgeOptions, Verdict, judge_run
from hil.regress.option_values import check_options
from hil.regress.stats import drop_warmup
from hil.report.figures import junit_properties, openmetrics_text
from hil.report.trace import write_trace_json
from hil.run import session_mark
from hil.run.folder import RunFolder
from hil.plugin.settings import option_help

__all__ = ["hil_budget", "judge_options", "marker_budget", "pytest_addoption", "pytest_collection_modifyitems",
           "pytest_configure", "pytest_runtest_makereport", "pytest_sessionfinish", "rerun_of", "run_folders"]

_METRICS = pytest.StashKey[list]()
_SESSION_BEFORE = pytest.StashKey["str | None"]()
_START_SLACK_S = 1.0
# The numeric options checked before the session starts (hil.regress.option_values).
_CHECKED = ("warmup", "tolerance", "noise-k", "min-delta-us", "confirm", "baseline-runs")


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("hil-regress", "et-hil nightly regression")
    # --hil-warmup, --hil-baseline, --hil-history and --hil-tolerance may come from the environment or the
    # ini file too: no defaults here (hil.plugin.settings).
    group.addoption("--hil-warmup", type=int, metavar="W", help=option_help("hil_warmup", "iterations dropped before statistics (warm-up; default 0)"))
    group.addoption("--hil-baseline", type=Path, metavar="PATH", help=option_help("hil_baseline", "baseline folder (<model>.json each) or file"))
    group.addoption("--hil-baseline-update", action="store_true", help="write this session's runs as the baselines")
    group.addoption("--hil-tolerance", type=parse_tolerance, metavar="T", help=option_help("hil_tolerance", "relative slowdown allowed (default 5%%)"))
    group.addoption("--hil-noise-k", type=float, default=DEFAULT_NOISE_K, metavar="K", help="sigmas of run noise a slowdown must exceed")
    group.addoption("--hil-min-delta-us", type=float, default=0.0, metavar="US", help="absolute change (us) below which nothing regresses")
    group.addoption("--hil-history", type=Path, metavar="DB", help=option_help("hil_history", "SQLite database every run is appended to"))
    group.addoption("--hil-budgets", type=Path, default=None, metavar="PATH", help="budgets file or folder (default: budgets/<board>.toml)")
    group.addoption("--hil-openmetrics", type=Path, default=None, metavar="FILE", help="write key figures as OpenMetrics text here")
    group.addoption("--hil-confirm", type=int, default=0, metavar="N",
                    help="re-run a suspected regression N times and fail only if the re-runs confirm it")
    group.addoption("--hil-baseline-runs", type=int, default=10, metavar="N",
                    help="earlier runs from --hil-history that make the baseline (default 10; 3 of the run's "
                         "time base are enough to judge without --hil-baseline)")
    group.addoption("--hil-strict", action="store_true",
                    help="fail a run that cannot be judged (no baseline, too few baseline runs of its time base, "
                         "a baseline of another time base, machine load)")


@pytest.hookimpl(trylast=True)  # after the main plugin wrote the environment's and the ini file's values (hil.plugin.settings)
def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "hil_budget(total_us=, npu_fraction_min=, ops={op type or kernel: us per event}, ops_total={op type: us summed}, modules={nn.Module path: us summed}, memory_bytes=, stack_bytes_max=, snr_db_min=, max_abs_error=): limits every run of the test must meet"
    )
    check_gate_options(config)
    try:
        check_options({name: config.getoption("hil_" + name.replace("-", "_")) for name in _CHECKED}, "--hil-")
    except InputError as exc:
        raise pytest.UsageError(str(exc)) from None
    config.stash[_METRICS] = []
    config.stash[_SESSION_BEFORE] = session_mark.begin()  # this session's id, in each run's manifest
    config.pluginmanager.register(junit.SuiteProperties(config), "hil-junit-suite-properties")
    config.pluginmanager.register(unjudged.NotJudgedSummary(), "hil-not-judged-summary")


def pytest_unconfigure(config: pytest.Config) -> None:
    if _SESSION_BEFORE in config.stash:
        session_mark.end(config.stash[_SESSION_BEFORE])


def check_gate_options(config: pytest.Config) -> None:
    """Refuse, before any run, a gate that could not judge anything as asked: a baseline path that does
    not exist (a typo would otherwise pass every night unjudged; `--hil-baseline-update` creates it), an
    update with nowhere to write, strict mode with nothing to judge against."""
    baseline, update = config.getoption("hil_baseline"), config.getoption("hil_baseline_update")
    if update and baseline is None:
        raise pytest.UsageError("--hil-baseline-update needs --hil-baseline PATH (where to write the baselines)")
    if baseline is not None and not update and not Path(baseline).exists():
        raise pytest.UsageError(f"--hil-baseline {baseline}: no such file or folder (write one with "
                                f"--hil-baseline {baseline} --hil-baseline-update)")
    if config.getoption("hil_strict") and baseline is None and config.getoption("hil_history") is None:
        raise pytest.UsageError("--hil-strict fails a run that cannot be judged, but nothing judges runs without "
                                "--hil-baseline PATH or --hil-history DB")


def judge_options(config: pytest.Config) -> JudgeOptions:
    # The project's budgets/ folder, else the defaults that ship with et-hil (package data).
    project = config.rootpath / "budgets"
    budgets = config.getoption("hil_budgets") or (project if project.is_dir() else BUDGETS_DIR)
    return JudgeOptions(
        warmup=config.getoption("hil_warmup"),
        baseline=config.getoption("hil_baseline"),
        baseline_update=config.getoption("hil_baseline_update"),
        tolerance=config.getoption("hil_tolerance"),
        noise_k=config.getoption("hil_noise_k"),
        min_delta_us=config.getoption("hil_min_delta_us"),
        history=config.getoption("hil_history"),
        budgets=Path(budgets),
        probe_id=getattr(config.option, "hil_probe", None),
        confirm=config.getoption("hil_confirm"),
        baseline_runs=config.getoption("hil_baseline_runs"),
        strict=config.getoption("hil_strict"),
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Every budget file and every test's `hil_budget` marker read before any test runs: a limit that is
    no finite number, or a negative duration or size, is the user's input, refused as a usage error
    naming the key, never a failed (or passed) test."""
    from hil.regress.budgets import check_budget_file

    budgets = judge_options(config).budgets
    files = sorted(budgets.glob("*.toml")) if budgets.is_dir() else [budgets] if budgets.is_file() else []
    try:
        for path in files:
            check_budget_file(path)
        for item in items:
            marker_budget(item)
    except InputError as exc:
        raise pytest.UsageError(str(exc)) from None


def marker_budget(item: pytest.Item) -> Budget | None:
    """The test's `hil_budget` markers merged (closest wins), or None."""
    merged: dict[str, Any] = {}
    for mark in reversed(list(item.iter_markers("hil_budget"))):
        merged.update(mark.kwargs)
    return budget_from_mapping(merged, f"@hil_budget on {item.nodeid}") if merged else None


def run_folders(item: pytest.Item, call_start: float) -> list[Path]:
    """Run folders of this test: recorded by the plugin, or written under its artifacts folder during the call."""
    # hil_profile's folders, when this session's run wrote them: a run refused in a folder another session
    # shares (busy with that session's run) is not judged under that run's figures (hil.run.session_mark)
    folders = [folder for folder in item.stash.get(RUN_FOLDERS, []) if session_mark.ours(folder)]
    folders += [Path(str(v)) for k, v in item.user_properties if k == junit.ARTIFACTS_PROPERTY]  # recorded by hand
    root = getattr(item, "funcargs", {}).get("hil_artifacts_dir")
    if root is not None and Path(root).is_dir():
        for manifest in sorted(Path(root).glob("*/manifest.json")):
            if manifest.stat().st_mtime >= call_start - _START_SLACK_S and not session_mark.others(manifest.parent):
                folders.append(manifest.parent)
    unique: dict[Path, Path] = {}
    for folder in folders:
        unique.setdefault(folder.resolve(), folder)
    return list(unique.values())


def rerun_of(item: pytest.Item, folder: Path) -> Callable[[int], Path] | None:
    """How to make a confirmation re-run of a run the `hil_profile` fixture made (None for other runs)."""
    from hil.plugin.hooks import RERUNS

    return item.stash.get(RERUNS, {}).get(str(Path(folder).resolve()))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, Any, Any]:
    report = yield
    if report.when != "call" or getattr(report, "wasxfail", None) is not None:
        return report
    folders = run_folders(item, call.start)
    if not folders:
        return report
    options = judge_options(item.config)
    verdicts = [_judge(f, options, item, report) for f in folders]
    _publish(item, report, verdicts)
    unjudged.attach(report, [_not_judged_line(v) for v in verdicts if v.not_judged])
    return report


def _not_judged_line(verdict: Verdict) -> str:
    profile, base = verdict.profile, verdict.time_base
    return (f"{profile.series if profile is not None else verdict.folder} on {profile.board if profile else '?'} "
            f"({base.key if base is not None else 'time base unknown'}): not judged: {verdict.not_judged}"
            + (f" ({verdict.hint})" if verdict.hint else ""))


def _judge(folder: Path, options: JudgeOptions, item: pytest.Item, report: pytest.TestReport) -> Verdict:
    """judge_run, with a harness error (an unreadable baseline, a locked database) failing this test
    with its message instead of aborting the whole session."""
    unwritten = _write_trace(folder)
    try:
        verdict = judge_run(folder, options, marker_budget=marker_budget(item), test_passed=report.passed,
                            test_id=item.nodeid, rerun=rerun_of(item, folder))
    except HilError as exc:
        return Verdict(folder, None, failures=[f"regression check of {folder} failed: {exc}"])
    verdict.notes[:0] = unwritten
    if verdict.profile is not None:
        verdict.properties[:0] = junit_properties(verdict.profile)
    return verdict


def _write_trace(folder: Path) -> list[str]:
    """trace.json of a run that has a profile, then its manifest relisted (it names every file); the
    note when it cannot be written (never a failure)."""
    if not (folder / "profile.json").is_file():
        return []
    try:
        write_trace_json(folder)
        RunFolder(folder).relist()
    except (HilError, OSError) as exc:
        return [f"trace.json not written: {exc}"]
    return []


def _publish(item: pytest.Item, report: pytest.TestReport, verdicts: list[Verdict]) -> None:
    """Key figures to JUnit and OpenMetrics, notes to a report section, failures to the outcome."""
    several = len(verdicts) > 1
    for verdict in verdicts:
        if verdict.profile is None:
            continue
        model = str(verdict.profile.model)
        name = f"{model}.{verdict.folder.name}" if several else model  # each run's figures under its own name
        props = [(f"hil.{name}{k[len(f'hil.{model}'):]}" if k.startswith(f"hil.{model}.") else k, v)
                 for k, v in verdict.properties]
        if uses_et_hil(item):  # a test that asked for nothing of et-hil gets no figures of its own
            junit.attach(item, report, [*props, (f"hil.{name}.artifacts", str(verdict.folder))])
        item.config.stash[_METRICS].append((verdict.profile, {"test": item.nodeid}))
    for said in (w for v in verdicts for w in v.warnings):
        item.warn(pytest.PytestWarning(said))
    notes = [n for v in verdicts for n in v.notes]
    if notes:
        report.sections.append(("hil regression", "\n".join(notes)))
    failures = [f for v in verdicts for f in v.failures]
    if failures and report.passed:
        report.outcome = "failed"
        report.longrepr = "\n\n".join(failures)
    elif failures:
        report.sections.append(("hil regression failures", "\n\n".join(failures)))


def pytest_sessionfinish(session: pytest.Session) -> None:
    path = session.config.getoption("hil_openmetrics", None)
    if path is not None and _METRICS in session.config.stash:
        atomic.write_text(Path(path), openmetrics_text(session.config.stash[_METRICS]))


@pytest.fixture
def hil_budget(pytestconfig: pytest.Config) -> Callable[..., None]:
    """Check a run against limits now: `hil_budget(run, total_us=900, ops={"0": 50})` fails with the numbers."""

    def check(run: Any, **limits: Any) -> None:
        profile = drop_warmup(getattr(run, "profile", run), pytestconfig.getoption("hil_warmup"))
        budget = budget_from_mapping(limits, "hil_budget fixture")
        violations = check_budget(profile, budget)
        if violations:
            pytest.fail(format_violations(violations, profile, budget, getattr(run, "out_dir", None)), pytrace=False)

    return check
