"""Baseline comparison: which events got slower than the tolerance, the noise and chance allow.

Judged across runs, not only inside one, because run-to-run shifts on a loaded machine are invisible
inside a run. The baseline is K earlier runs of the same program (the history database keeps them;
a baseline file is one run), the new side is the run plus any confirmation re-runs. Per event, with
B = the baseline runs' figures and X = the new runs' figures, a run's figure for an event being its p50
over the iterations on a board clock, and its fastest iteration on host time (see below):

    delta    = median(X) - median(B)
    limit    = max(tolerance x median(B), min_share x Method::execute, min_delta_us, noise)
    noise    = noise_k x 1.4826 x MAD(B)              (K >= 3: the spread between runs)
             = noise_k x 1.4826 x hypot(MAD_b, MAD_now) (K < 3: only the spread inside each run is known)
    improved   when -delta > limit
    slower     when delta > limit, then decided by the first rule that can decide with these runs:
      rank       (K >= 3, and 1 / C(K + n, n) <= alpha) the one-sided Mann-Whitney U p-value of X above
                 B <= alpha, counted exactly with ties (hil.regress.exact_rank): tied figures, as exact
                 instruction counts often are, raise it, never lower it below 1 / C(K + n, n)
      within-run (every iteration count >= 2) delta > noise_k x 1.4826 x hypot(MAD_b, MAD_now) as well,
                 and (K >= 3) every new run slower than every baseline run: the strongest evidence
                 the rank test can give with these runs
      none       "cannot judge": the verdict says how many more baseline runs the rank test needs

`min_share` is the minimum effect size that matters: an event must add at least that share of the
whole inference (0.1%), so a 1 us operator doubling is not a regression of a 28 ms model. With n new
runs against K baseline runs the smallest p-value is 1 / C(K + n, n) (hil.regress.power): a lone run
against 3 to 8 runs can never reach alpha = 0.1, so there the rank test does not veto and the
within-run rule decides; confirmation re-runs (`--hil-confirm N`) give the rank test the power to
decide before a suspected regression fails.

Timestamps from the host runtime (nanoseconds on a shared machine) also carry machine load: another
job on the same cores only ever adds time, in bursts that hit some iterations and not others, so on
host time a run's figure for an event is its fastest iteration (measured on this kind of machine, the
p50 of 10 iterations let 2-4 of 29 comparisons of an unchanged model fail while another suite ran;
the fastest iteration let at most 1). Sustained load slows every large operator of a run alike.
Such runs are told apart from a program change by their overall shift (the median ratio of the large events to the baseline): baseline
runs outside the fastest cluster are left out of the baseline, and a new run shifted by more than 20%
is "not judged: machine load" (re-run it). A new run shifted by less than that is judged, but each
event's limit grows by the shift (limit + (shift - 1) x median(B)): an operator must be slower than
the rest of its run, not only slower than the baseline. Board clocks (RT700, the simulated Neutron
board) carry no machine load, so there every change is judged as it is.

An event measured in one iteration only has no spread: unless the rank test can decide it, it is
"unjudged", or "cannot judge" when it is slower than every limit.
Regressions are listed operators first, then the delegate calls and methods that contain them, each by
the time they add per inference, largest first: what to look at first.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from hil.records.profile_model import Profile, as_profile
from hil.regress.exact_rank import p_text
from hil.regress.identity import UNJUDGED_KINDS, keyed_events, op_types_text, readable_names
from hil.regress.power import baseline_runs_needed, best_p_value, rank_test_can_decide
from hil.regress.verdicts import (ADDED, CANNOT_JUDGE, DEFAULT_ALPHA, DEFAULT_MIN_SHARE, DEFAULT_NOISE_K,  # noqa: F401
                                  DEFAULT_TOLERANCE, IMPROVEMENT, MIN_BASELINE_RUNS, MIN_ITERATIONS, RANK_RULE,
                                  REGRESSION, REMOVED, UNCHANGED, UNJUDGED, WITHIN_RUN_RULE, Comparison, EventDelta,
                                  parse_tolerance)

_METHOD_KEY = "method:Method::execute#0"
# A load this large in the kept new runs is said in the notes.
LOAD_NOTE_SHIFT = 0.02
from hil.regress.stats import DISTURBED_SHIFT, MAD_TO_SIGMA, median, rank_p_value, run_shift, spread, undisturbed

def judge(base_p50: float, base_mad: float, now_p50: float, now_mad: float, *, tolerance: float, noise_k: float,
          min_delta_us: float = 0.0) -> tuple[str, float]:
    """Verdict and noise (us) for one event from one run on each side (the within-run rule)."""
    noise = noise_k * MAD_TO_SIGMA * math.hypot(base_mad, now_mad)
    delta = now_p50 - base_p50
    limit = max(tolerance * base_p50, noise, min_delta_us)
    if delta > limit:
        return REGRESSION, noise
    if -delta > limit:
        return IMPROVEMENT, noise
    return UNCHANGED, noise


@dataclass(frozen=True)
class _Sample:
    """One event in one run: its figure (p50, or on host time the fastest iteration), MAD and iterations."""

    value: float
    mad: float
    n: int


def _samples(profile: Profile) -> dict[str, _Sample]:
    fastest = host_timed(profile)
    out = {}
    for key, event in keyed_events(profile.events).items():
        p50, mad = event.spread
        value = event.fastest if fastest else p50
        out[key] = _Sample(value, mad, event.measured)
    return out


def host_timed(profile: Profile | Mapping[str, Any]) -> bool:
    """Nanosecond timestamps written by the host runtime: times that machine load reaches."""
    return as_profile(profile).host_timed


def compare_runs(
    baselines: Sequence[Mapping[str, Any]],
    nows: Sequence[Mapping[str, Any]],
    *,
    tolerance: float = DEFAULT_TOLERANCE,
    noise_k: float = DEFAULT_NOISE_K,
    min_delta_us: float = 0.0,
    min_share: float = DEFAULT_MIN_SHARE,
    alpha: float = DEFAULT_ALPHA,
) -> Comparison:
    """Judge the runs `nows` (a run and its confirmation re-runs) against the baseline runs `baselines`."""
    if not baselines or not nows:
        raise ValueError("compare_runs needs at least one baseline run and one new run")
    baselines, nows = [as_profile(p) for p in baselines], [as_profile(p) for p in nows]
    base, now = [_samples(p) for p in baselines], [_samples(p) for p in nows]
    notes = _describe(baselines, nows)
    disturbed, load = False, 0.0
    if len(base) >= MIN_BASELINE_RUNS and all(host_timed(p) for p in [*baselines, *nows]):
        base, now, shifted, load = _drop_disturbed(base, now, notes)
        disturbed = not now
        now = now or shifted
    first_now, first_base = nows[0], baselines[0]
    before, after = keyed_events(first_base.events), keyed_events(first_now.events)
    whole = median([r[_METHOD_KEY].value for r in base if _METHOD_KEY in r]) if any(_METHOD_KEY in r for r in base) else 0.0
    limits = _Limits(tolerance, noise_k, min_delta_us, min_share * whole, alpha, load)
    named = {id(e): n for run in (first_base, first_now) for e, n in zip(run.events, readable_names(run.events))}
    deltas = []
    for key in list(after) + [k for k in before if k not in after]:
        event = after.get(key) or before[key]
        kind, name, types = str(event.kind), named[id(event)], op_types_text(event)
        if key not in before or key not in after:
            value = event.spread[0]
            verdict = ADDED if key not in before else REMOVED
            base_v, now_v = (None, value) if verdict == ADDED else (value, None)
            deltas.append(EventDelta(key, kind, name, types, base_v, now_v, 0.0, verdict))
            continue
        b = [r[key] for r in base if key in r]
        x = [r[key] for r in now if key in r]
        judged = _verdict(kind, b, x, limits, disturbed)
        deltas.append(EventDelta(key, kind, name, types, median([s.value for s in b]), median([s.value for s in x]),
                                 judged.noise, judged.verdict, judged.p_value, judged.rule, judged.runs_needed))
    added, removed = sum(d.verdict == ADDED for d in deltas), sum(d.verdict == REMOVED for d in deltas)
    if added or removed:
        notes.append(f"program structure changed: {added} event(s) added, {removed} removed (not judged)")
    if any(d.verdict == UNJUDGED for d in deltas) and not disturbed:
        notes.append("warning: events measured in 1 iteration cannot be judged (n = 1); run more iterations")
    notes += _power_notes(deltas, len(base), len(now), alpha)
    from hil.numerics.gate import snr_drop

    return Comparison(deltas, tolerance, noise_k, min_delta_us, notes, len(base), len(now), disturbed, alpha,
                      snr_drop(baselines, nows))


@dataclass(frozen=True)
class _Limits:
    tolerance: float
    noise_k: float
    min_delta_us: float
    min_effect_us: float
    alpha: float
    load: float = 0.0  # how much slower the kept new runs are as a whole (0.12 = 12%), host times only


@dataclass(frozen=True)
class _Judged:
    verdict: str
    noise: float
    p_value: float | None = None
    rule: str | None = None
    runs_needed: int = 0


def _verdict(kind: str, b: list[_Sample], x: list[_Sample], limits: _Limits, disturbed: bool) -> _Judged:
    """Verdict, noise (us), rank p-value and deciding rule of one event (see the module docstring)."""
    before, after = [s.value for s in b], [s.value for s in x]
    across = len(b) >= MIN_BASELINE_RUNS
    within = limits.noise_k * MAD_TO_SIGMA * math.hypot(median([s.mad for s in b]), median([s.mad for s in x]))
    noise = limits.noise_k * spread(before) if across else within
    one_iteration = min(s.n for s in [*b, *x]) == 1
    if disturbed:
        return _Judged(UNJUDGED, noise)
    if kind in UNJUDGED_KINDS:
        return _Judged(UNJUDGED if one_iteration else UNCHANGED, noise)
    center, delta = median(before), median(after) - median(before)
    load = limits.load * center
    limit = max(limits.tolerance * center, limits.min_effect_us, limits.min_delta_us, noise) + load
    if delta <= limit:
        return _Judged(UNJUDGED if one_iteration else IMPROVEMENT if -delta > limit else UNCHANGED, noise)
    p_value = rank_p_value(after, before) if across else None
    if across and rank_test_can_decide(len(b), len(x), limits.alpha):
        return _Judged(REGRESSION if p_value <= limits.alpha else UNCHANGED, noise, p_value, RANK_RULE)
    if not one_iteration:
        above_all = not across or min(after) > max(before)
        regressed = above_all and delta > within + load
        return _Judged(REGRESSION if regressed else UNCHANGED, noise, p_value, WITHIN_RUN_RULE)
    needed = baseline_runs_needed(len(x), limits.alpha, at_least=MIN_BASELINE_RUNS) - len(b)
    return _Judged(CANNOT_JUDGE, noise, p_value, None, needed)


def _power_notes(deltas: list[EventDelta], base_runs: int, now_runs: int, alpha: float) -> list[str]:
    """What the rank test could prove with these runs, and what decided instead."""
    notes = []
    slower = [d for d in deltas if d.rule == WITHIN_RUN_RULE and base_runs >= MIN_BASELINE_RUNS]
    if slower:
        more = baseline_runs_needed(now_runs, alpha, at_least=MIN_BASELINE_RUNS) - base_runs
        notes.append(f"rank test: {now_runs} new run(s) against {base_runs} baseline run(s) reach p >= "
                     f"{p_text(best_p_value(base_runs, now_runs))} at best, above alpha {alpha:g}: slower events judged by "
                     f"the within-run spread ({more} more baseline run(s), or --hil-confirm, let the rank test decide)")
    cleared = [d for d in deltas if d.rule == RANK_RULE and d.verdict == UNCHANGED]
    if cleared:
        notes.append(f"rank test: {len(cleared)} slower event(s) not significant, exact p above alpha {alpha:g}: "
                     + ", ".join(f"{d.name} p = {p_text(d.p_value or 1.0)}" for d in cleared[:5])
                     + f" (p reaches {p_text(best_p_value(base_runs, now_runs))} only when every new run is slower than "
                     "every baseline run and ties none)")
    blind = [d for d in deltas if d.verdict == CANNOT_JUDGE]
    if blind:
        needed = max(d.runs_needed for d in blind)
        notes.append(f"cannot judge: {needed} more baseline run(s) needed ({len(blind)} slower event(s) measured in "
                     f"1 iteration, where the rank test cannot reach alpha {alpha:g} yet: "
                     + ", ".join(d.name for d in blind[:5]) + ")")
    return notes


def _drop_disturbed(base: list[dict[str, _Sample]], now: list[dict[str, _Sample]], notes: list[str]
                    ) -> tuple[list[dict[str, _Sample]], list[dict[str, _Sample]], list[dict[str, _Sample]], float]:
    """Leave out baseline runs outside the quiet cluster and new runs slowed down as a whole (machine load).

    Also returns the load left in the kept new runs (median shift - 1, never below 0), which widens
    every limit: a run 12% slower as a whole only convicts an event more than 12% slower.
    """
    as_values = lambda runs: [{k: s.value for k, s in r.items()} for r in runs]  # noqa: E731
    keep, _ = undisturbed(as_values(base), _METHOD_KEY)
    if len(keep) < len(base):
        notes.append(f"{len(base) - len(keep)} of {len(base)} baseline run(s) left out: slowed as a whole (machine load)")
    base = [base[i] for i in keep]
    centers = {k: median([r[k].value for r in base if k in r]) for k in base[0]}
    shifts = [run_shift(r, centers, _METHOD_KEY) for r in as_values(now)]
    kept_at = [i for i, s in enumerate(shifts) if s <= 1 + DISTURBED_SHIFT]
    kept = [now[i] for i in kept_at]
    if len(kept) < len(now):
        worst = max(shifts)
        notes.append(f"{len(now) - len(kept)} of {len(now)} new run(s) slowed as a whole (x{worst:.2f} over every large "
                     f"event): machine load, not the program" + ("; not judged: re-run (--hil-confirm N)" if not kept else ""))
    load = max(0.0, median([shifts[i] for i in kept_at]) - 1.0) if kept_at else 0.0
    if load >= LOAD_NOTE_SHIFT:
        notes.append(f"new run(s) {100 * load:.0f}% slower as a whole (machine load): every limit widened by as much")
    return base, kept, now, load


def _describe(baselines: Sequence[Profile], nows: Sequence[Profile]) -> list[str]:
    first_base, first_now = baselines[0], nows[0]
    # the series (the model, `+delegate` when lowered to one): the key the baseline file and history use
    notes = [f"baseline: {len(baselines)} run(s), board {first_base.board}, model {first_base.series}, "
             f"{first_base.iterations} iterations",
             f"now: {len(nows)} run(s), board {first_now.board}, model {first_now.series}, "
             f"{first_now.iterations} iterations"]
    if first_base.board != first_now.board:
        notes.append(f"warning: boards differ ({first_base.board} vs {first_now.board})")
    if len(baselines) < MIN_BASELINE_RUNS:
        notes.append(f"baseline of {len(baselines)} run(s): judged by the spread inside each run only "
                     f"(keep {MIN_BASELINE_RUNS}+ runs in the history to judge across runs)")
    few = sorted({int(p.iterations or 0) for p in [*baselines, *nows] if int(p.iterations or 0) < MIN_ITERATIONS})
    if few:
        notes.append(f"warning: run(s) with {', '.join(map(str, few))} iteration(s): fewer than {MIN_ITERATIONS} "
                     "cannot show a run's spread")
    return notes


def compare_profiles(baseline: Mapping[str, Any], current: Mapping[str, Any], **limits: Any) -> Comparison:
    """Compare one run with one baseline run (see `compare_runs`)."""
    return compare_runs([baseline], [current], **limits)


def _rows_table(title: str, rows: list[EventDelta]) -> list[str]:
    """A table of judged events (both sides measured)."""
    headers = ("event", "kind", "op types", "baseline us", "now us", "change %", "added us", "noise us", "p")
    cells = [
        (d.name, d.kind, d.op_types, f"{d.baseline_us:.1f}", f"{d.now_us:.1f}",
         "-" if d.change_pct is None else f"{d.change_pct:+.1f}", f"{d.delta_us:+.1f}", f"{d.noise_us:.1f}",
         "-" if d.p_value is None else p_text(d.p_value))
        for d in rows
    ]
    widths = [max(len(h), *(len(c[i]) for c in cells)) for i, h in enumerate(headers)]
    line = lambda values: "  ".join(v.ljust(w) if i < 3 else v.rjust(w) for i, (v, w) in enumerate(zip(values, widths)))  # noqa: E731
    return [title, line(headers), line(tuple("-" * w for w in widths)), *(line(c) for c in cells)]


def format_comparison(comparison: Comparison, *, limit: int = 10) -> str:
    """The regression table people read: worst regressions first, then improvements."""
    regs, imps = comparison.regressions, comparison.improvements
    head = (
        f"{len(regs)} regression(s), {len(imps)} improvement(s) among {len(comparison.deltas)} events "
        f"(tolerance {comparison.tolerance * 100:g}%, noise {comparison.noise_k:g} sigma)"
    )
    out = [head, *comparison.notes]
    if comparison.numerics_drop:
        out.insert(1, f"numerics regression: {comparison.numerics_drop}")
    if regs:
        out += ["", *_rows_table(f"worst regressions (of {len(regs)}):", regs[:limit])]
    blind = comparison.cannot_judge
    if blind:
        out += ["", *_rows_table(f"cannot judge: {comparison.runs_needed} more baseline run(s) needed "
                                 f"(slower, of {len(blind)}):", blind[:limit])]
    if imps:
        out += ["", *_rows_table(f"improvements (of {len(imps)}):", imps[:limit])]
    return "\n".join(out)


def comparison_to_dict(comparison: Comparison) -> dict[str, Any]:
    """JSON-ready form (for history, reports and `hil compare --json`)."""
    return {
        "tolerance": comparison.tolerance,
        "noise_k": comparison.noise_k,
        "has_regression": comparison.has_regression,
        "numerics_drop": comparison.numerics_drop,
        "disturbed": comparison.disturbed,
        "baseline_runs": comparison.baseline_runs,
        "now_runs": comparison.now_runs,
        "alpha": comparison.alpha,
        "best_p_value": comparison.best_p_value,
        "runs_needed": comparison.runs_needed,
        "notes": comparison.notes,
        "events": [
            {"key": d.key, "kind": d.kind, "name": d.name, "op_types": d.op_types, "baseline_us": d.baseline_us,
             "now_us": d.now_us, "change_pct": d.change_pct, "noise_us": d.noise_us, "verdict": d.verdict,
             "p_value": d.p_value, "rule": d.rule, "runs_needed": d.runs_needed}
            for d in comparison.deltas
        ],
    }
