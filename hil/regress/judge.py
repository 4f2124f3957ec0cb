"""Judging one finished run: budgets, baseline, history, in one place.

The pytest hooks collect run folders and options, publish what a run shows (trace.json, key figures:
hil.plugin.regress_hooks, through hil.report) and call `judge_run`; judging never publishes, so it
can be tested without a pytest session and without the report side.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hil.records.profile_model import Profile
from hil.base.errors import HilError
from hil.regress import history
from hil.regress.baseline import baseline_time_base, find_baseline, write_baseline
from hil.regress.budgets import Budget, check_budget, format_violations, load_file_budget, merge_budgets
from hil.regress.compare import (DEFAULT_ALPHA, DEFAULT_MIN_SHARE, DEFAULT_NOISE_K, DEFAULT_TOLERANCE,
                                 MIN_BASELINE_RUNS, Comparison, compare_runs, comparison_to_dict, format_comparison)
from hil.regress.gate import (CANNOT_JUDGE, NO_BASELINE, OTHER_TIME_BASE, TOO_FEW_RUNS, UNKNOWN_TIME_BASE, Decision,
                              decide, not_judged)
from hil.records.manifest import Manifest
from hil.regress.runs import LoadedRun, load_run, read_manifest
from hil.regress.stats import drop_warmup
from hil.regress.timebase import TimeBase, time_base_of


@dataclass
class JudgeOptions:
    """What the session asked for (all optional: a plain `pytest --board qemu` judges nothing)."""

    warmup: int = 0
    baseline: Path | None = None
    baseline_update: bool = False
    tolerance: float = DEFAULT_TOLERANCE
    noise_k: float = DEFAULT_NOISE_K
    min_delta_us: float = 0.0
    history: Path | None = None
    budgets: Path | None = None  # a budgets TOML file, or a folder of <board>.toml
    probe_id: str | None = None
    confirm: int = 0  # re-runs before a suspected regression fails
    baseline_runs: int = 10  # earlier runs from the history that make the baseline
    min_share: float = DEFAULT_MIN_SHARE
    alpha: float = DEFAULT_ALPHA
    strict: bool = False  # "cannot judge" fails (hil.regress.gate)


# Makes the n-th confirmation re-run of a run and returns its run folder.
Rerun = Callable[[int], Path]


@dataclass
class Verdict:
    """The outcome for one run folder."""

    folder: Path
    profile: Profile | None
    failures: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    properties: list[tuple[str, str]] = field(default_factory=list)
    comparison: Comparison | None = None
    decision: Decision | None = None
    source: str = ""  # which baseline the comparison used
    warnings: list[str] = field(default_factory=list)  # said even under -q (pytest warnings)
    time_base: TimeBase | None = None  # what the run's figures count (hil.regress.timebase)
    baseline_ids: list[int] = field(default_factory=list)  # the history rows the baseline was made of
    hint: str = ""  # what would make a run not judged judged (a history filling: how far it is)

    @property
    def not_judged(self) -> str | None:
        """Why a run the session asked to judge was not (the decision's one line), else None."""
        decision = self.decision
        return decision.reason if decision is not None and not decision.judged else None


@dataclass
class _Chosen:
    """The baseline runs for one run and where they came from, or the decision not to judge it."""

    profiles: list[Profile] = field(default_factory=list)
    source: str = ""
    ids: list[int] = field(default_factory=list)
    decision: Decision | None = None
    hint: str = ""  # how to get a baseline, said after a decision not to judge
    damaged: list[str] = field(default_factory=list)  # history rows left out, named (hil.regress.history_seal)


def budget_file(options: JudgeOptions, board: str) -> Path | None:
    if options.budgets is None:
        return None
    return options.budgets / f"{board}.toml" if options.budgets.is_dir() else options.budgets


def _load(folder: Path) -> tuple[LoadedRun | None, Manifest]:
    if (folder / "profile.json").is_file():
        run = load_run(folder)
        return run, run.manifest
    return None, Manifest.from_json(read_manifest(folder))


def judge_run(folder: Path, options: JudgeOptions, *, marker_budget: Budget | None, test_passed: bool,
              test_id: str | None = None, rerun: Rerun | None = None) -> Verdict:
    """Check one run folder against budgets and baseline, then record it; never raises for a bad run."""
    folder = Path(folder)
    run, manifest = _load(folder)
    if run is None:  # the run itself failed: keep it in the history as a failure
        verdict = Verdict(folder, None, notes=[f"{folder}: no profile.json (run failed: {manifest.error or '?'})"])
        if options.history and manifest:
            stub = failed_profile(manifest)
            history.record_run(options.history, stub, manifest, passed=False, test_id=test_id,
                               probe_id=options.probe_id, artifacts=folder)
        return verdict
    profile = drop_warmup(run.profile, options.warmup)
    verdict = Verdict(folder, profile, time_base=time_base_of(profile, manifest))
    model, board = str(profile.model), str(profile.board)
    verdict.properties.append((f"hil.{profile.model}.time_base", verdict.time_base.key))
    _check_budget(verdict, options, marker_budget)
    _check_baseline(verdict, run, options, rerun)
    if verdict.decision is not None:  # the key figures join these where they are published
        verdict.properties += verdict.decision.properties(f"hil.{profile.model}")
    if options.history:
        history.record_run(
            options.history, profile, manifest, passed=test_passed and not verdict.failures, test_id=test_id,
            probe_id=options.probe_id, artifacts=folder, comparison=_stored(verdict), time_base=verdict.time_base,
        )
        verdict.notes.append(f"{model} on {board}: recorded in history {options.history}")
    return verdict


def _check_budget(verdict: Verdict, options: JudgeOptions, marker_budget: Budget | None) -> None:
    profile = verdict.profile or Profile()
    path = budget_file(options, str(profile.board))
    budget = merge_budgets(load_file_budget(path, str(profile.model)) if path else None, marker_budget)
    if budget is None or budget.empty:
        return
    violations = check_budget(profile, budget)
    if violations:
        verdict.failures.append(format_violations(violations, profile, budget, verdict.folder))
    else:
        verdict.notes.append(f"{profile.model}: budget met ({budget.source})")


def failed_profile(manifest: Manifest) -> Profile:
    """What the history keeps of a run that left no profile: its board, and the model and delegate its
    passing runs are recorded under (the name the export gave it, else the name its spec resolves to,
    `models.py:kws_factory` -> `models-kws_factory`), so it joins their series instead of starting one."""
    name = manifest.model_name
    if not name and manifest.model:
        from hil.aot.models import resolve_spec

        try:
            name = resolve_spec(str(manifest.model)).name
        except HilError:  # a spec that names nothing: no passing run has another name for it
            name = str(manifest.model)
    return Profile.from_json({"board": manifest.board, "model": name, "delegate": manifest.delegate, "events": []})


def _baselines(options: JudgeOptions, model: str, board: str, base: TimeBase) -> _Chosen:
    """The baseline runs of one run: the history's last passed runs of this program, board and time base
    when it holds enough of them (MIN_BASELINE_RUNS) to show the spread between runs, else the baseline
    file (one run) when its time base is the run's; else the decision not to judge, saying why."""
    strict = options.strict
    if not base.known:
        return _Chosen(decision=not_judged(UNKNOWN_TIME_BASE, f"the run's time base is {base.describe()}; it is "
                                           "compared with nothing", strict=strict),
                       hint="a run folder written by this et-hil records its image and clocks")
    recent = history.recent_runs(options.history, model, board, base, options.baseline_runs) if options.history \
        else history.RecentRuns()
    chosen = _from_history_or_file(options, model, base, recent)
    chosen.damaged = recent.damaged
    return chosen


def _from_history_or_file(options: JudgeOptions, model: str, base: TimeBase, recent: history.RecentRuns) -> _Chosen:
    """The history's runs when they are enough, else the baseline file of the run's time base, else why not."""
    strict = options.strict
    if len(recent.profiles) >= MIN_BASELINE_RUNS:
        return _Chosen(recent.profiles, f"the last {len(recent.profiles)} passed run(s) in history {options.history}",
                       recent.ids)
    found = find_baseline(options.baseline, model) if options.baseline is not None else None
    if found is not None:
        theirs = baseline_time_base(found)
        if theirs.matches(base):
            return _Chosen([found.profile], f"baseline {found.source}")
        return _Chosen(decision=not_judged(
            OTHER_TIME_BASE, f"baseline {found.source} counts {theirs.describe()}, this run {base.describe()}: "
            "not comparable", strict=strict), hint="write a baseline of this time base with --hil-baseline-update")
    reasons = [f"no baseline under {options.baseline}"] if options.baseline is not None else []
    if options.history is not None:
        others = ", ".join(f"{count} of {key}" for key, count in sorted(recent.other_bases.items()))
        reasons.append(f"history {options.history} holds {len(recent.profiles)} of the {MIN_BASELINE_RUNS} passed "
                       f"runs of time base {base.key} it needs" + (f" (left out, another time base: {others})" if others else ""))
    if options.baseline is not None:
        return _Chosen(decision=not_judged(NO_BASELINE, "; ".join(reasons), strict=strict),
                       hint=f"write one with --hil-baseline-update or `hil baseline update RUN --out {options.baseline}`")
    # The history is the only judge and is still filling: the run passes unjudged and joins it as a passed
    # run, under --hil-strict too, so the history fills itself (a failed run would never count towards it).
    held = len(recent.profiles)
    return _Chosen(decision=not_judged(TOO_FEW_RUNS, "; ".join(reasons), strict=False,
                                       runs_needed=MIN_BASELINE_RUNS - held),
                   hint=f"history filling: this run is passed run {held + 1} of the {MIN_BASELINE_RUNS} it needs; "
                        "every run after those is judged")


def _check_baseline(verdict: Verdict, run: LoadedRun, options: JudgeOptions, rerun: Rerun | None) -> None:
    if options.baseline is None and options.history is None:  # nothing to judge against: no gate was asked for
        return
    profile = verdict.profile or Profile()
    model, base = profile.series, verdict.time_base or time_base_of(profile, run.manifest)
    if options.baseline_update and options.baseline is not None:
        written = write_baseline(LoadedRun(profile, run.source, run.folder, run.manifest), options.baseline)
        verdict.notes.append(f"{model}: baseline updated: {written} (time base {base.key})")
        return
    chosen = _baselines(options, model, str(profile.board), base)
    verdict.warnings += chosen.damaged
    if chosen.decision is not None:
        verdict.decision, verdict.hint = chosen.decision, chosen.hint
        said = f"{model} on {profile.board}: {verdict.decision.reason}; not compared ({chosen.hint})"
        verdict.warnings.append(said)
        (verdict.failures if verdict.decision.failed else verdict.notes).append(said + _STRICT * verdict.decision.failed)
        return
    baselines, source = chosen.profiles, chosen.source
    verdict.baseline_ids = chosen.ids
    limits = dict(tolerance=options.tolerance, noise_k=options.noise_k, min_delta_us=options.min_delta_us,
                  min_share=options.min_share, alpha=options.alpha)
    nows = [profile]
    comparison = compare_runs(baselines, nows, **limits)
    if comparison.needs_confirmation and options.confirm and rerun is not None:
        suspected = [d.name for d in comparison.regressions + comparison.suspects] or ["the whole run (machine load?)"]
        for index in range(1, options.confirm + 1):
            again = load_run(rerun(index))
            if not time_base_of(again.profile, again.manifest).matches(base):  # a re-run that ran another image
                raise HilError(f"confirmation re-run {again.source} counts {time_base_of(again.profile, again.manifest).key}, "
                               f"the run it confirms {base.key}: not comparable")
            nows.append(drop_warmup(again.profile, options.warmup))
        comparison = compare_runs(baselines, nows, **limits)
        comparison.notes.append(f"suspected: {', '.join(suspected)}; after {options.confirm} confirmation re-run(s): "
                                + ("confirmed" if comparison.has_regression else "not confirmed, passes"))
    comparison.notes.append(f"time base: {base.describe()}")
    verdict.comparison, verdict.source = comparison, source
    verdict.decision = decision = decide(comparison, strict=options.strict)
    text = f"{model} against {source}: {decision.reason}\n{format_comparison(comparison)}"
    if decision.failed and decision.status != CANNOT_JUDGE:
        verdict.failures.append(f"performance regression: {text}\n  artifacts: {verdict.folder}")
    elif decision.failed:
        verdict.failures.append(f"{text}{_STRICT}\n  artifacts: {verdict.folder}")
    else:
        verdict.notes.append(text)
        if decision.status == CANNOT_JUDGE:
            verdict.warnings.append(f"{model} against {source}: {decision.reason}")


# Said after a "cannot judge" that failed the test only because strict mode asked for it.
_STRICT = "\n  (a failure because --hil-strict is on)"


def _stored(verdict: Verdict) -> dict[str, Any] | None:
    """What the history keeps of the judgement: the comparison, the decision the gate took, the baseline."""
    if verdict.comparison is None and verdict.decision is None:
        return None
    stored = comparison_to_dict(verdict.comparison) if verdict.comparison is not None else {"events": []}
    if verdict.decision is not None:
        stored["decision"] = {"status": verdict.decision.status, "failed": verdict.decision.failed,
                              "reason": verdict.decision.reason, "runs_needed": verdict.decision.runs_needed,
                              "judged": verdict.decision.judged, "not_judged": verdict.decision.why_not or None}
    stored["baseline"] = verdict.source
    stored["baseline_run_ids"] = verdict.baseline_ids
    stored["time_base"] = verdict.time_base.key if verdict.time_base is not None else None
    return stored
