"""The `drift` section as table lines: the operators by gap (worst first) and the first that drifts."""

from __future__ import annotations

from typing import Any

from hil.records.profile_model import Profile

# Operators listed in the table (all of them are in profile.json).
SHOWN = 12


def drift_lines(profile: Profile) -> list[str]:
    """The lines `hil run` and `hil inspect` print under the table; none without a `drift` section."""
    drift = profile.drift
    if not drift:
        return []
    threshold = drift.get("threshold_snr_db")
    lines = ["", f"operator outputs against the ETRecord (SNR dB, worst first; drift below {threshold:g} dB):"]
    ranked = sorted(drift.get("operators", []), key=_rank)
    for entry in ranked[:SHOWN]:
        lines.append(f"  {entry['op'][:40]:<41}{_snr(entry):>14}  {entry.get('status', '')}")
    if len(ranked) > SHOWN:
        lines.append(f"  ... {len(ranked) - SHOWN} more in profile.json")
    first = drift.get("first_drift")
    if drift.get("note"):
        lines.append(f"no gap: {drift['note']}")
    elif first:
        lines.append(f"first operator that drifts: {first['op']} (SNR {first['snr_db']:.1f} dB < {threshold:g} dB; "
                     f"runtime {', '.join(first['runtime_ops'])})")
    else:
        lines.append(f"no operator drifts (every compared SNR >= {threshold:g} dB)")
    buffer = drift.get("debug_buffer") or {}
    etdump = (profile.memory.get("allocators") or {}).get("etdump_buffer") or {}
    if buffer:
        lines.append(f"debug buffer: {buffer.get('used_bytes')} B used of {buffer.get('capacity_bytes')} B "
                     f"({buffer.get('runs')} run(s); predicted {buffer.get('predicted_bytes')} B)"
                     + (f"; ETDump buffer: {etdump['used']} B used of {etdump['total']} B" if etdump else ""))
    return lines


def _rank(entry: dict[str, Any]) -> tuple[int, float]:
    """Compared operators by SNR, lowest first; identical ones after them; uncompared last."""
    if entry.get("snr_db") is not None:
        return 0, float(entry["snr_db"])
    return (1, 0.0) if entry.get("identical") else (2, 0.0)


def _snr(entry: dict[str, Any]) -> str:
    if entry.get("snr_db") is not None:
        return f"{entry['snr_db']:.1f}"
    return "identical" if entry.get("identical") else "n/a"
