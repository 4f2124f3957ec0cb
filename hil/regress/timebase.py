"""A run's time base: what its figures count, so runs that count different things are never compared.

Every figure is shown in microseconds, but where the microseconds come from differs by image and board:

- `runtime-instructions`: the QEMU runtime image (ExecuTorch's runtime on the emulated Cortex-M33) under
  `-icount shift=N`: instruction counts, 2^N ns of virtual time each (hil.firmware.qemu_firmware.time_base);
- `replay-host-ns`: the QEMU replay image handing out a CPU-only program's ETDump made by the host
  runtime: the host's nanoseconds, machine load included (a replay image is what a run without the
  firmware sources falls back to);
- `simulated-ticks`: the QEMU replay image handing out the simulated Neutron buffer: the cost model's
  ticks at the board file's CPU and NPU clocks;
- `board-cycles`: an RT700 (board kind rt700) counting its core clock's cycles;
- `rt700-emu-instructions`: the RT700 bench image on the emulated Cortex-M33 (board kind rt700-emu), its DWT
  CYCCNT counting instructions executed, read at the board file's clock;
- `user-image-ticks`: a firmware image of the user's on QEMU, its ticks read at the board file's clock;
- `unknown`: a run that does not say (a history row or baseline written before time bases were kept,
  with too little to tell): it never matches anything, itself included.

The parameters that change what one tick is are part of the key (the icount shift, the clocks the ticks
are divided by; the NPU clock only when the program has a delegate). Two runs are comparable only when
their keys are equal and known; the history, the baseline files, the gate, `hil compare` and the report
all read a run's base from `time_base_of` (a run folder or baseline) or `from_history_row` (a history row
written before the column existed), so there is one rule.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from hil.records.profile_model import Profile
from hil.records.manifest import Manifest

KINDS = (RUNTIME_INSTRUCTIONS, REPLAY_HOST_NS, SIMULATED_TICKS, BOARD_CYCLES, USER_IMAGE_TICKS, EMULATED_RT700,
         UNKNOWN) = ("runtime-instructions", "replay-host-ns", "simulated-ticks", "board-cycles", "user-image-ticks",
                     "rt700-emu-instructions", "unknown")

_WORDS = {
    RUNTIME_INSTRUCTIONS: "emulated instructions of the QEMU runtime image",
    REPLAY_HOST_NS: "host nanoseconds replayed by the QEMU replay image",
    SIMULATED_TICKS: "simulated Neutron cost-model ticks replayed by the QEMU replay image",
    BOARD_CYCLES: "the RT700's cycle counter",
    USER_IMAGE_TICKS: "ticks of a user's firmware image on QEMU",
    EMULATED_RT700: "instructions of the RT700 image on the emulated Cortex-M33 (board kind rt700-emu)",
}
# The parameters of a key, in the order they are written, and how they are said.
_PARAMETERS = (("shift", "-icount shift"), ("cpu", "CPU clock"), ("npu", "NPU clock"))


@dataclass(frozen=True)
class TimeBase:
    """One run's time base: its kind and the parameters that set what one tick is.

    `why` says, for an unknown base, what was missing; it is not part of the key.
    """

    kind: str
    parameters: tuple[tuple[str, str], ...] = ()
    why: str = ""

    @property
    def known(self) -> bool:
        return self.kind != UNKNOWN

    @property
    def key(self) -> str:
        """`kind/name=value/...`: what the history stores and the JUnit property says."""
        return "/".join([self.kind, *(f"{name}={value}" for name, value in self.parameters)])

    def matches(self, other: "TimeBase") -> bool:
        """Comparable: the same key, and known (an unknown base matches nothing, not even itself)."""
        return self.known and other.known and self.key == other.key

    def describe(self) -> str:
        """The key in words, for a reader of a failure message or the report."""
        if not self.known:
            return f"unknown ({self.why})" if self.why else "unknown"
        said = dict(_PARAMETERS)
        words = [f"{said.get(name, name)} {value}" for name, value in self.parameters]
        return f"{self.key} ({_WORDS[self.kind]}{', ' if words else ''}{', '.join(words)})"

    @classmethod
    def parse(cls, key: str | None) -> "TimeBase":
        """The inverse of `key`; None, empty or a kind this version does not know: unknown."""
        kind, *rest = str(key or UNKNOWN).split("/")
        if kind not in KINDS:
            return cls(UNKNOWN, why=f"time base {key!r} is none this version knows")
        return cls(kind, tuple((name, value) for name, _, value in (p.partition("=") for p in rest)))


def unknown(why: str) -> TimeBase:
    return TimeBase(UNKNOWN, why=why)


def _mhz(value: Any) -> str:
    return f"{float(value):g}MHz"


def _host_ns(scale: Mapping[str, Any]) -> bool:
    """The host runtime's nanoseconds (hil.analysis.timescale.TimeScale.nanoseconds)."""
    return scale.get("ticks_per_us") == 1000.0 and not scale.get("follows_clock")


def _clocks(scale: Mapping[str, Any], delegated: bool) -> tuple[tuple[str, str], ...]:
    cpu = (("cpu", _mhz(scale["ticks_per_us"])),)
    npu = scale.get("neutron_ticks_per_us")
    return cpu + ((("npu", _mhz(npu)),) if delegated and npu is not None else ())


def time_base_of(profile: Profile, manifest: Manifest | None = None) -> TimeBase:
    """The time base of a run from its profile.json and, where it has one, its manifest.json.

    The profile says which QEMU image ran (`firmware`), its time base (`time_base`, with the icount
    shift) and its clocks (`time_scale`); the manifest says the board's kind and repeats the image and
    the clocks (a profile copied without its folder, or a baseline file, has only its own keys).
    """
    manifest = manifest or Manifest()
    firmware = profile.firmware or manifest.firmware_kind
    scale = profile.time_scale or manifest.time_scale or {}
    base = profile.time_base or (manifest.annotations or {}).get("time_base") or {}
    delegated = str(profile.delegate or manifest.delegate or "none") != "none"
    if not scale.get("ticks_per_us"):
        return unknown("the run records no time scale")
    if firmware == "runtime":
        if "icount_shift" not in base:
            return unknown("a runtime-image run without its time base (profile.json `time_base`)")
        shift = base["icount_shift"]
        npu = _clocks(scale, delegated)[1:]
        return TimeBase(RUNTIME_INSTRUCTIONS, (("shift", "none" if shift is None else str(shift)), *npu))
    if firmware == "replay":
        if _host_ns(scale):
            return TimeBase(REPLAY_HOST_NS)
        return TimeBase(SIMULATED_TICKS, _clocks(scale, True))
    if manifest.board_kind == "rt700":
        return TimeBase(BOARD_CYCLES, _clocks(scale, delegated))
    if firmware == "rt700-emu" or manifest.board_kind == "rt700-emu":
        return TimeBase(EMULATED_RT700, _clocks(scale, False))
    if firmware == "user" and manifest.board_kind == "qemu":
        return TimeBase(USER_IMAGE_TICKS, _clocks(scale, delegated))
    if firmware is None and profile.simulated and _host_ns(scale):
        return TimeBase(REPLAY_HOST_NS)  # only the replay image hands out the host runtime's nanoseconds
    return unknown("the run says neither which image ran nor the board's kind")


def from_history_row(row: Mapping[str, Any]) -> TimeBase:
    """A history row's time base: its `time_base` column, else (a row written before the column) what
    the row still tells: a simulated run in the host's nanoseconds was a replay; anything else unknown."""
    if row.get("time_base"):
        return TimeBase.parse(str(row["time_base"]))
    scale = row.get("time_scale")
    if isinstance(scale, str):
        try:
            scale = json.loads(scale)
        except ValueError:
            scale = None
    if row.get("simulated") and isinstance(scale, Mapping) and _host_ns(scale):
        return TimeBase(REPLAY_HOST_NS)
    return unknown("recorded before the history kept time bases")
