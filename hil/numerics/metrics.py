"""The error figures of one output against a reference: how far the target's numbers are from the truth.

Rules (each computed in float64 over all elements):
- max_abs_error = max |a - r|
- max_rel_error = max |a - r| / max |r|: relative to the reference's peak magnitude, because an
  element-wise ratio explodes wherever the reference is 0 (a ReLU's output is full of them)
- snr_db = 10 log10(sum r^2 / sum (a - r)^2); None when the two are identical (an infinite SNR:
  JSON has no infinity), and then `bit_exact` is true
- an all-zero reference counts as TINY in the two ratios, so a wrong output against it stays a
  finite, very bad figure (about -3000 dB) rather than an infinity
- cosine = a.r / (|a| |r|); 1.0 when both are all zero, 0.0 when only one is
- a NaN or an infinity in an output makes its errors and SNR None with `non_finite` true and
  `bit_exact` false (no bound holds), never a number
- top1_agreement (classifiers: an output of shape [N, C] with C > 1): the share of the N rows whose
  largest class is the same in both
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch

# Stands for 0 in a ratio's denominator (the smallest normal float64 is 2.2e-308).
TINY = 1e-300


def compare(actual: "torch.Tensor", reference: "torch.Tensor") -> dict[str, Any]:
    """The figures of `actual` against `reference` (same shape); see the module docstring for each rule."""
    if tuple(actual.shape) != tuple(reference.shape):
        raise ValueError(f"shapes differ: {list(actual.shape)} vs the reference's {list(reference.shape)}")
    a = actual.detach().reshape(-1).double()
    r = reference.detach().reshape(-1).double()
    error = a - r
    max_abs = float(error.abs().max()) if error.numel() else 0.0
    peak = float(r.abs().max()) if r.numel() else 0.0
    noise = float((error * error).sum())
    signal = float((r * r).sum())
    figures: dict[str, Any] = {
        "max_abs_error": max_abs,
        "max_rel_error": max_abs / max(peak, TINY) if max_abs else 0.0,
        "snr_db": None if noise == 0 else 10 * math.log10(max(signal, TINY) / noise),
        "cosine": _cosine(a, r),
        "bit_exact": bool(torch_equal(actual, reference)),
    }
    if not math.isfinite(noise):
        figures["non_finite"] = True
    top1 = top1_agreement(actual, reference)
    if top1 is not None:
        figures["top1_agreement"] = top1
    return {key: _finite(value) for key, value in figures.items()}


def top1_agreement(actual: "torch.Tensor", reference: "torch.Tensor") -> float | None:
    """Share of rows with the same arg-max class, for a [N, C] output with C > 1; None for any other shape."""
    if actual.dim() != 2 or actual.shape[1] < 2:
        return None
    same = (actual.argmax(dim=1) == reference.argmax(dim=1)).double()
    return float(same.mean())


def torch_equal(actual: "torch.Tensor", reference: "torch.Tensor") -> bool:
    """Element for element the same values (NaN never equals)."""
    import torch

    return bool(torch.equal(actual, reference))


def _cosine(a: "torch.Tensor", r: "torch.Tensor") -> float:
    norm_a, norm_r = float(a.norm()), float(r.norm())
    if norm_a == 0 or norm_r == 0:
        return 1.0 if norm_a == norm_r else 0.0
    return float((a * r).sum()) / (norm_a * norm_r)


def _finite(value: Any) -> Any:
    """JSON-able: an infinite or NaN float becomes None (said by the other fields: bit_exact, snr_db)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def worst(figures: list[dict[str, Any]]) -> dict[str, Any]:
    """The worst of several outputs' figures: the largest errors, the lowest SNR, cosine and top-1.

    An SNR of None (identical) is the best possible: it is the worst only when every output is identical.
    """
    if not figures:
        return {}
    out: dict[str, Any] = {
        "max_abs_error": _largest(f["max_abs_error"] for f in figures),
        "max_rel_error": _largest(f["max_rel_error"] for f in figures),
        "snr_db": _lowest_snr(figures),
        "cosine": None if any(f["cosine"] is None for f in figures) else min(f["cosine"] for f in figures),
        "bit_exact": all(f["bit_exact"] for f in figures),
    }
    top1 = [f["top1_agreement"] for f in figures if "top1_agreement" in f]
    if top1:
        out["top1_agreement"] = min(top1)
    return out


def _largest(values: Any) -> float | None:
    """The largest value; None (a NaN or an infinity somewhere: not a number one can bound) wins."""
    values = list(values)
    return None if any(v is None for v in values) else max(values)


def _lowest_snr(figures: list[dict[str, Any]]) -> float | None:
    """The lowest SNR; None when every output is identical, or when one has no finite SNR (NaN: not bit-exact)."""
    if any(f.get("snr_db") is None and not f["bit_exact"] for f in figures):
        return None
    snrs = [f["snr_db"] for f in figures if f.get("snr_db") is not None]
    return min(snrs) if snrs else None
