"""The verdicts of a comparison and what they hold: one event's before and after, and every event's.

Kept apart from the rule that produces them (hil.regress.compare) so that the text and JSON forms,
the gate's decision and the report read the same objects.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from hil.records.events import DELEGATE_CALL, METHOD
from hil.base.defaults import MIN_ITERATIONS  # noqa: F401  (re-exported: compare reads it here)
from hil.regress.power import best_p_value

DEFAULT_TOLERANCE = 0.05
DEFAULT_NOISE_K = 3.0
DEFAULT_MIN_SHARE = 0.001
DEFAULT_ALPHA = 0.1
# Fewer baseline runs than this: no spread between runs can be estimated.
MIN_BASELINE_RUNS = 3


def parse_tolerance(text: str) -> float:
    """`5`, `5%` or `0.05` -> 0.05: a tolerance is given as people say it (numbers >= 1 are percent)."""
    value = float(text.rstrip("%"))
    return value / 100.0 if text.endswith("%") or value >= 1 else value


# Events that contain others (a method its operators and delegate calls, a delegate call its kernels)
# rank after what they contain when regressions are named.
_CONTAINER_RANK = {DELEGATE_CALL: 1, METHOD: 2}


def naming_order(kind: str, delta_us: float) -> tuple[int, float]:
    """The sort key that names slower events: operators before their containers, most time added first
    (the report finds the gate's "first" regression of a stored comparison with it)."""
    return _CONTAINER_RANK.get(kind, 0), -delta_us
REGRESSION, IMPROVEMENT, UNCHANGED, ADDED, REMOVED = "regression", "improvement", "unchanged", "added", "removed"
UNJUDGED = "unjudged"
# Slower than every limit, but no rule can decide with these runs (the rules: hil.regress.compare).
CANNOT_JUDGE = "cannot judge"
RANK_RULE, WITHIN_RUN_RULE = "rank", "within-run"


@dataclass
class EventDelta:
    """One event, before and after."""

    key: str
    kind: str
    name: str
    op_types: str
    baseline_us: float | None
    now_us: float | None
    noise_us: float
    verdict: str
    p_value: float | None = None
    rule: str | None = None  # which rule decided a slowdown: "rank" or "within-run"
    runs_needed: int = 0  # "cannot judge": how many more baseline runs the rank test needs

    @property
    def change_pct(self) -> float | None:
        if not self.baseline_us or self.now_us is None:
            return None
        return 100.0 * (self.now_us - self.baseline_us) / self.baseline_us

    @property
    def delta_us(self) -> float:
        if self.baseline_us is None or self.now_us is None:
            return 0.0
        return self.now_us - self.baseline_us


@dataclass
class Comparison:
    """Every event's verdict, with the limits that produced them."""

    deltas: list[EventDelta]
    tolerance: float = DEFAULT_TOLERANCE
    noise_k: float = DEFAULT_NOISE_K
    min_delta_us: float = 0.0
    notes: list[str] = field(default_factory=list)
    baseline_runs: int = 1
    now_runs: int = 1
    disturbed: bool = False
    alpha: float = DEFAULT_ALPHA
    # The outputs' SNR against eager PyTorch dropped (hil.numerics.gate): a regression of what is computed.
    numerics_drop: str | None = None

    def _by(self, verdict: str) -> list[EventDelta]:
        return [d for d in self.deltas if d.verdict == verdict]

    @property
    def regressions(self) -> list[EventDelta]:
        """Operators first, then the delegate calls and methods that contain them; largest time added first.

        A method's time includes every operator's, so when one convolution slows down `Method::execute`
        adds at least as much and would otherwise always be named first, hiding the cause.
        """
        return sorted(self._by(REGRESSION), key=lambda d: naming_order(d.kind, d.delta_us))

    @property
    def improvements(self) -> list[EventDelta]:
        return sorted(self._by(IMPROVEMENT), key=lambda d: d.delta_us)

    @property
    def has_regression(self) -> bool:
        return any(d.verdict == REGRESSION for d in self.deltas) or self.numerics_drop is not None

    @property
    def best_p_value(self) -> float:
        """The smallest p-value the rank test can reach with these run counts (hil.regress.power)."""
        return best_p_value(self.baseline_runs, self.now_runs)

    @property
    def cannot_judge(self) -> list[EventDelta]:
        """Events slower than every limit that no rule could decide: more baseline runs are needed."""
        return sorted(self._by(CANNOT_JUDGE), key=lambda d: naming_order(d.kind, d.delta_us))

    @property
    def runs_needed(self) -> int:
        """More baseline runs needed before every slower event can be judged (0 when none is needed)."""
        return max((d.runs_needed for d in self.cannot_judge), default=0)

    @property
    def suspects(self) -> list[EventDelta]:
        """Events slower than every limit but not (yet) significantly: too few runs to tell."""
        return [d for d in self.deltas if d.verdict == UNCHANGED and d.p_value is not None]

    @property
    def needs_confirmation(self) -> bool:
        """A regression, a suspect, or a run too disturbed to judge: what confirmation re-runs settle."""
        return self.has_regression or self.disturbed or bool(self.suspects) or bool(self.cannot_judge)
