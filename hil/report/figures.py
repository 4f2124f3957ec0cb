"""Key figures of a run, as JUnit XML properties and as OpenMetrics text for dashboards.

The same few numbers everywhere (total latency, NPU fraction, NPU and CPU time, top kernels), so
a CI page, a Grafana panel and the HTML report never disagree about what a run measured.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from hil.records.profile_model import Event, Profile, as_profile
from hil.regress.identity import event_labels, op_types_text, readable_names

TOP_KERNELS = 3


def top_events(profile: Profile | Mapping[str, Any], kinds: tuple[str, ...] = ("npu_kernel", "cpu_op"),
               n: int = TOP_KERNELS) -> list[Event]:
    """The `n` slowest events of the given kinds by p50, slowest first."""
    chosen = as_profile(profile).of_kind(*kinds)
    return sorted(chosen, key=lambda e: -e.spread[0])[:n]


def key_figures(profile: Profile | Mapping[str, Any]) -> dict[str, Any]:
    """The key figures; the top events named as a reader calls them (`call 0 / kernel 1: convolution`)."""
    profile = as_profile(profile)
    totals = profile.totals_us
    labels = {id(e): label for e, label in zip(profile.events, readable_names(profile.events))}
    return {
        "total_us": totals.get("method_execute"),
        "npu_fraction": profile.npu_fraction,
        "npu_kernels_us": totals.get("npu_kernels"),
        "cpu_ops_us": totals.get("cpu_ops"),
        "cpu_fallback_ops": list(profile.cpu_fallback_ops),
        "top": [(labels[id(e)], e.kind, op_types_text(e), e.spread[0]) for e in top_events(profile)],
    }


def junit_properties(profile: Profile | Mapping[str, Any], prefix: str | None = None) -> list[tuple[str, str]]:
    """`(name, value)` pairs of machine-readable key figures; `prefix` keeps two models of one test apart.

    Every value is a number or a name (never a sentence), so a CI dashboard can plot or filter it
    without parsing: `hil.<model>.total_us`, `.npu_fraction`, `.npu_kernels_us`, `.cpu_ops_us`,
    `.cpu_fallback_op_count` and `.cpu_fallback_ops` (comma-separated op names), for the slowest
    events `.topN.p50_us`, `.topN.kind`, `.topN.name` (an NPU kernel with its call and op types, a repeated
    operator with its `#2`), and `.topN.module` / `.topN.source` (`conv2`, `models.py:13`) when the ETRecord
    names the user's layer; the program `.series` (the model, `+delegate` when lowered to one: the key of
    its baseline file and history), and the numerics (`numerics_properties`).
    """
    profile = as_profile(profile)
    figures = key_figures(profile)
    base = f"hil.{prefix or profile.model}"
    props = []
    for key in ("total_us", "npu_fraction", "npu_kernels_us", "cpu_ops_us"):
        if figures[key] is not None:
            props.append((f"{base}.{key}", f"{figures[key]:.6g}"))
    props.append((f"{base}.cpu_fallback_op_count", str(len(figures["cpu_fallback_ops"]))))
    if figures["cpu_fallback_ops"]:
        props.append((f"{base}.cpu_fallback_ops", ",".join(figures["cpu_fallback_ops"])))
    labels = {id(e): label for e, label in zip(profile.events, event_labels(profile.events))}
    for rank, event in enumerate(top_events(profile), 1):
        top = f"{base}.top{rank}"
        props += [(f"{top}.p50_us", f"{event.spread[0]:.6g}"), (f"{top}.kind", str(event.kind)),
                  (f"{top}.name", _compact(labels[id(event)].name))]
        if event.modules:  # the user's layers (nn.Module paths) and source lines, when the ETRecord names them
            props.append((f"{top}.module", ",".join(event.modules)))
        if event.sources:
            props.append((f"{top}.source", ",".join(event.sources)))
    props.append((f"{base}.series", profile.series))
    return props + numerics_properties(profile.numerics, base)


NUMERICS_FIGURES = ("snr_db", "max_rel_error", "max_abs_error", "cosine", "top1_agreement")


def numerics_properties(section: Mapping[str, Any] | None, base: str) -> list[tuple[str, str]]:
    """The worst output's figures against each reference, as a run's `numerics` section holds them:
    `<base>.numerics` (`computed`, `not computed`, `not finite`), then per reference (`vs_eager`,
    `vs_host_runtime`) `.snr_db`, `.max_rel_error`, `.max_abs_error`, `.cosine`, `.top1_agreement` (a share,
    0..1; outputs of [N, C] only) and `.bit_exact`; an SNR of identical outputs is infinite and left out
    (`bit_exact` true). A reference the run skipped gives its `.skipped` reason. No section, no properties."""
    if not section:
        return []
    status = str(section.get("status"))
    if status == "computed" and section.get("non_finite_outputs"):
        status = "not finite"  # hil.numerics.check gives no figures then
    props = [(f"{base}.numerics", status)]
    if status != "computed":
        return props
    for reference in ("vs_eager", "vs_host_runtime"):
        figures = section.get(reference) or {}
        name = f"{base}.numerics.{reference}"
        if "skipped" in figures:
            props.append((f"{name}.skipped", _compact(str(figures["skipped"]))))
            continue
        props += [(f"{name}.{key}", f"{float(figures[key]):.6g}") for key in NUMERICS_FIGURES
                  if figures.get(key) is not None]
        if "bit_exact" in figures:
            props.append((f"{name}.bit_exact", "true" if figures["bit_exact"] else "false"))
    return props


def _compact(name: str) -> str:
    """A name without blanks, for a property value a dashboard filters on: `call_0/kernel_1:convolution,relu`."""
    return name.replace(" / ", "/").replace(": ", ":").replace(", ", ",").replace(" ", "_")


def _label_value(value: Any) -> str:
    return str(value).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _labels(labels: dict[str, Any]) -> str:
    return "{" + ",".join(f'{k}="{_label_value(v)}"' for k, v in labels.items()) + "}"


# OpenMetrics wants base units: times are exported in seconds (the profile's microseconds / 1e6), and each
# family with a unit names it in a `# UNIT` line and as its name's suffix.
US_PER_S = 1e6
_GAUGES = (
    ("hil_latency_seconds", "seconds", "Method::execute p50 per inference", lambda f: _seconds(f["total_us"])),
    ("hil_npu_fraction", "", "NPU kernel time over Method::execute", lambda f: f["npu_fraction"]),
    ("hil_npu_kernels_seconds", "seconds", "NPU kernel time per inference (p50)", lambda f: _seconds(f["npu_kernels_us"])),
    ("hil_cpu_ops_seconds", "seconds", "CPU operator time per inference (p50)", lambda f: _seconds(f["cpu_ops_us"])),
)
EVENT_METRIC = "hil_event_p50_seconds"


def _seconds(us: Any) -> float | None:
    return None if us is None else float(us) / US_PER_S


def _metadata(metric: str, unit: str, help_text: str) -> list[str]:
    return [f"# TYPE {metric} gauge", *([f"# UNIT {metric} {unit}"] if unit else []), f"# HELP {metric} {help_text}"]


def openmetrics_text(runs: Iterable[tuple[Profile | Mapping[str, Any], dict[str, Any]]]) -> str:
    """OpenMetrics exposition for (profile, extra labels) pairs; ends with `# EOF` as the format requires."""
    runs = [(as_profile(profile), extra) for profile, extra in runs]
    lines: list[str] = []
    for metric, unit, help_text, pick in _GAUGES:
        samples = []
        for profile, extra in runs:
            value = pick(key_figures(profile))
            if value is not None:
                labels = {"model": profile.model, "board": profile.board, **extra}
                samples.append(f"{metric}{_labels(labels)} {float(value):.6g}")
        if samples:
            lines += [*_metadata(metric, unit, help_text), *samples]
    event_samples = []
    for profile, extra in runs:
        for event in profile.of_kind("npu_kernel", "cpu_op"):
            labels = {"model": profile.model, "board": profile.board, **extra, "kind": event.kind,
                      "event": event.name, "op_types": op_types_text(event)}
            seconds = event.spread[0] / US_PER_S
            event_samples.append(f"{EVENT_METRIC}{_labels(labels)} {seconds:.6g}")
    if event_samples:
        lines += [*_metadata(EVENT_METRIC, "seconds", "p50 of one event"), *_dedupe(event_samples)]
    return "\n".join(lines + ["# EOF"]) + "\n"


def _dedupe(samples: list[str]) -> list[str]:
    """Repeated events (same name and op types) would collide as series: number them."""
    seen: dict[str, int] = {}
    out = []
    for sample in samples:
        series = sample.rsplit(" ", 1)[0]
        count = seen.get(series, 0)
        seen[series] = count + 1
        out.append(sample if count == 0 else re.sub(r"\}", f',occurrence="{count}"}}', sample, count=1))
    return out
