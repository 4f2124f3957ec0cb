"""How raw ETDump timestamps become microseconds, for CPU (PAL) events and Neutron events.

The host runtime writes nanoseconds; the RT700 runtime writes PAL ticks (DWT cycles at the core
clock) for CPU events and Neutron timer ticks for Neutron events; a dump whose clock nobody knows is
reported in its own ticks, and says so (`unit = "ticks"`), rather than passing ticks off as time.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from hil.records.console import ConsoleFacts

US = "us"
TICKS = "ticks"


@dataclass(frozen=True)
class TimeScale:
    """How many raw ticks make one output unit, for CPU (PAL) events and for Neutron events.

    `follows_clock` marks ticks that are core-clock cycles: the console's `Core/NPU Frequency`
    line then replaces the board file's clock. `neutron_ticks_per_us=None` means "same as PAL".
    `unit` is what the numbers are in after division: microseconds, or raw ticks when no clock is known.
    """

    ticks_per_us: float
    neutron_ticks_per_us: float | None = None
    follows_clock: bool = False
    unit: str = US

    @classmethod
    def nanoseconds(cls) -> "TimeScale":
        """The host runtime's clock (and the simulated buffer made from it)."""
        return cls(1000.0)

    @classmethod
    def core_cycles(cls, clock_mhz: float, neutron_ticks_per_us: float | None = None) -> "TimeScale":
        """RT700-style raw PAL ticks counted at the core clock."""
        return cls(float(clock_mhz), neutron_ticks_per_us, follows_clock=True)

    @classmethod
    def raw_ticks(cls) -> "TimeScale":
        """No clock known: numbers stay in the dump's own ticks and are labelled so."""
        return cls(1.0, unit=TICKS)

    def with_console(self, console: ConsoleFacts | None) -> "TimeScale":
        """The console's clock line wins over the board file for clock-following CPU ticks."""
        if self.follows_clock and console is not None and console.clock_mhz:
            return replace(self, ticks_per_us=float(console.clock_mhz))
        return self

    @property
    def npu_ticks_per_us(self) -> float:
        return self.neutron_ticks_per_us or self.ticks_per_us

    def to_dict(self) -> dict[str, Any]:
        return {
            "ticks_per_us": self.ticks_per_us,
            "neutron_ticks_per_us": self.npu_ticks_per_us,
            "follows_clock": self.follows_clock,
            "unit": self.unit,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "TimeScale":
        """The inverse of `to_dict` (a run's manifest keeps the scale its profile was made with); without
        `neutron_ticks_per_us`, Neutron ticks count at the CPU's rate, as `None` means in the constructor.
        `data` has been checked (hil.records.validate.profile.check_time_scale)."""
        neutron = data.get("neutron_ticks_per_us")
        return cls(float(data["ticks_per_us"]), None if neutron is None else float(neutron),
                   bool(data.get("follows_clock")), str(data.get("unit") or US))


def board_time_scale(board_kind: str, clock_mhz: float, *, neutron: bool, npu_clock_mhz: float | None = None) -> TimeScale:
    """The scale of the ETDump a board writes: one rule for `hil run` and `hil inspect`.

    A QEMU board replays the host runtime's nanoseconds for a program without a Neutron delegate and
    a simulated tick buffer for one with it; an RT700 always writes ticks at its clock. So a board
    file's clock applies only to tick-based dumps. The emulated RT700's ticks are instructions executed, shown
    at the board file's rate: they never follow the console's clock line (the skipped clock tree makes it say
    64 MHz, which is no rate of the counter).
    """
    if board_kind == "qemu" and not neutron:
        return TimeScale.nanoseconds()
    if board_kind == "rt700-emu":
        return TimeScale(float(clock_mhz))
    return TimeScale.core_cycles(clock_mhz, npu_clock_mhz)
