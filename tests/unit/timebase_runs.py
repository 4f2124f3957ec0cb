"""Run folders as the pipeline writes them for each image and board, for the time-base tests.

Each kind's profile.json and manifest.json keys are the ones hil.run.pipeline and
hil.firmware.qemu_firmware.annotations write (boards/qemu.toml: icount shift 2, 20 MHz tick, clocks
324 / 250 MHz); the events come from the seeded generator. The expected key of each kind is written
out by hand in `KEYS`, from those values, never derived by the product.
"""

from __future__ import annotations

from pathlib import Path

from hil.base import atomic
from test_regress_synth import synth_profile

NS = {"ticks_per_us": 1000.0, "neutron_ticks_per_us": 1000.0, "follows_clock": False, "unit": "us"}
SIM = {"ticks_per_us": 324.0, "neutron_ticks_per_us": 250.0, "follows_clock": True, "unit": "us"}
RUNTIME = {"ticks_per_us": 20.0, "neutron_ticks_per_us": 250.0, "follows_clock": True, "unit": "us"}
RT700 = {"ticks_per_us": 250.0, "neutron_ticks_per_us": 250.0, "follows_clock": True, "unit": "us"}
RUNTIME_BASE = {"kind": "emulated instructions", "tick_mhz": 20.0, "icount_shift": 2, "ns_per_instruction": 4}

# (profile keys, manifest keys) per kind of run.
KINDS = {
    "runtime": ({"firmware": "runtime", "time_scale": RUNTIME, "time_base": RUNTIME_BASE, "simulated": False},
                {"board_kind": "qemu", "firmware_kind": "runtime", "simulated": False}),
    "runtime-npu": ({"firmware": "runtime", "time_scale": RUNTIME, "time_base": RUNTIME_BASE, "simulated": False,
                     "delegate": "neutron-sim"},
                    {"board_kind": "qemu", "firmware_kind": "runtime", "simulated": False, "delegate": "neutron-sim"}),
    "replay": ({"firmware": "replay", "time_scale": NS, "time_base": {"kind": "replayed"}, "simulated": True},
               {"board_kind": "qemu", "firmware_kind": "replay", "simulated": True}),
    "replay-npu": ({"firmware": "replay", "time_scale": SIM, "time_base": {"kind": "replayed"}, "simulated": True,
                    "delegate": "neutron"},
                   {"board_kind": "qemu", "firmware_kind": "replay", "simulated": True, "delegate": "neutron"}),
    "rt700": ({"time_scale": RT700, "simulated": False, "board": "rt700"},
              {"board_kind": "rt700", "firmware_kind": "user", "simulated": False, "board": "rt700"}),
}
KEYS = {
    "runtime": "runtime-instructions/shift=2",
    "runtime-npu": "runtime-instructions/shift=2/npu=250MHz",
    "replay": "replay-host-ns",
    "replay-npu": "simulated-ticks/cpu=324MHz/npu=250MHz",
    "rt700": "board-cycles/cpu=250MHz",
}


def run_profile(kind: str, seed: int, *, scale: float = 1.0, **kwargs) -> dict:
    """A profile of kind `kind`; `scale` multiplies every time (a replay's host times are not instructions)."""
    profile = synth_profile(seed, **kwargs)
    profile.pop("firmware", None)
    profile.update(KINDS[kind][0])
    if scale != 1.0:
        for event in profile["events"]:
            event["times_us"] = [t * scale for t in event["times_us"]]
            event["p50_us"] *= scale
        profile["totals_us"] = {k: v * scale for k, v in profile["totals_us"].items()}
    return profile


def run_folder(root: Path, name: str, kind: str, seed: int, *, written_at: str = "2026-02-01T00:00:00Z",
               **kwargs) -> Path:
    """A run folder of kind `kind`: profile.json and manifest.json."""
    folder = root / name
    profile = run_profile(kind, seed, **kwargs)
    atomic.write_json(folder / "profile.json", profile)
    atomic.write_json(folder / "manifest.json", {"board": profile["board"], "model": profile["model"],
                                                 "written_at": written_at, **KINDS[kind][1]})
    return folder
