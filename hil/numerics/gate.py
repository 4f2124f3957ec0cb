"""The nightly gate's numerics rule: an output SNR that drops is flagged like a slowdown.

The figure is the worst output's SNR against eager PyTorch (profile["numerics"]["vs_eager"]); an
identical output (no error at all) counts as an infinite SNR. On a board clock the outputs are
deterministic (QEMU runs the same instructions on the same inputs every time), so a drop of more than
`max_drop_db` to below float rounding's level (ROUNDING_SNR_DB) is a change in what the program
computes: a bad quantization, a broken kernel.
Runs that computed no outputs (simulated NPU, replay image) are not judged on numerics.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from hil.records.profile_model import Profile, as_profile
from hil.records.numerics_section import COMPUTED

# The SNR drop (dB) that is a regression, once the new SNR is below float rounding's level: a wrong
# layer or a broken kernel costs tens of dB, a rebuild of the same program none.
DEFAULT_MAX_SNR_DROP_DB = 1.0
# Above this the outputs agree to float32 rounding (its epsilon, 1.2e-7, is 138 dB): a change in the
# order of a sum moves the SNR by a few dB up there (measured: the QEMU image's cifar10 is 140.0 dB from
# eager and 142.2 dB from the host runtime), which is no change in what is computed.
ROUNDING_SNR_DB = 100.0


def output_snr(profile: Profile | Mapping[str, Any]) -> float | None:
    """The worst output's SNR against eager PyTorch (inf when bit-exact); None when no outputs were computed."""
    section = as_profile(profile).numerics or {}
    if section.get("status") != COMPUTED:
        return None
    fig = section.get("vs_eager") or {}
    if "skipped" in fig:
        return None
    if fig.get("bit_exact"):
        return math.inf
    snr = fig.get("snr_db")
    return -math.inf if snr is None else float(snr)  # None without bit_exact: a NaN or infinity in an output


def snr_drop(baselines: Sequence[Mapping[str, Any]], nows: Sequence[Mapping[str, Any]],
             max_drop_db: float = DEFAULT_MAX_SNR_DROP_DB) -> str | None:
    """What dropped, in one line, when the new runs' output SNR is more than `max_drop_db` below the baseline's."""
    base = sorted(s for s in (output_snr(p) for p in baselines) if s is not None)
    now = sorted(s for s in (output_snr(p) for p in nows) if s is not None)
    if not base or not now:
        return None
    before, after = base[len(base) // 2], now[len(now) // 2]  # the median run of each side
    if not before - after > max_drop_db or after >= ROUNDING_SNR_DB:  # inf - inf is NaN: bit-exact twice never drops
        return None
    return f"output SNR vs eager PyTorch dropped from {_db(before)} to {_db(after)} (more than {max_drop_db:g} dB)"


def _db(value: float) -> str:
    if value == math.inf:
        return "bit-exact"
    if value == -math.inf:
        return "not finite (NaN or infinity in an output)"
    return f"{value:.1f} dB"


def numerics_summary(section: Mapping[str, Any] | None) -> dict[str, Any]:
    """What the history keeps of a `numerics` section: the status, why not, the worst figures per reference."""
    if not section:
        return {}
    return {key: section[key] for key in ("status", "reason", "vs_eager", "vs_host_runtime") if key in section}
