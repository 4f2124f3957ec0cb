"""A seeded generator of profiles in the `et-hil/profile/1` shape, shared by the regression tests.

It mimics what the analysis writes for a partly delegated model: `Method::execute`, CPU fallback
operators (one repeated), a `DELEGATE_CALL` holding NPU kernels "0".."k-1" and the profiling dump.
The "true" cost of each event comes from `structure_seed` (same for every run of one program),
the per-iteration noise from `seed`, as relative Gaussian jitter like the simulated board's.
"""

from __future__ import annotations

import random
import statistics
from typing import Any

from hil.regress.timebase import TimeBase

# The time base of every synthetic run, written by hand from the profile's keys below.
SIM_TICKS_KEY = "simulated-ticks/cpu=324MHz/npu=250MHz"
SIM_TICKS = TimeBase.parse(SIM_TICKS_KEY)

KERNEL_OPS = (
    ["aten.convolution.default", "aten.relu.default"],
    ["aten.convolution.default"],
    ["aten.max_pool2d.default"],
    ["aten.addmm.default"],
    ["aten.convolution.default", "aten.hardtanh.default"],
)
# What a reader calls each kernel of the one delegate call (hil.regress.identity.readable_names), by hand.
KERNEL_NAMES = ("call 0 / kernel 0: convolution, relu", "call 0 / kernel 1: convolution", "call 0 / kernel 2: max_pool2d",
                "call 0 / kernel 3: addmm", "call 0 / kernel 4: convolution, hardtanh")
CPU_OPS = (
    ("native_call_convolution.out", ["aten.convolution.default"]),
    ("native_call_convolution.out", ["aten.convolution.default"]),
    ("native_call__softmax.out", ["aten._softmax.default"]),
)


def synth_profile(
    seed: int,
    *,
    structure_seed: int = 7,
    iterations: int = 10,
    jitter: float = 0.01,
    slow: dict[tuple[str, str, int], float] | None = None,
    board: str = "qemu",
    model: str = "synthnet",
    warmup_factor: float = 1.0,
) -> dict[str, Any]:
    """One run. `slow[(kind, name, occurrence)] = factor` scales that event's true cost."""
    truth = random.Random(structure_seed)
    noise = random.Random(seed)
    slow = slow or {}

    def times(kind: str, name: str, occ: int, base: float) -> list[float]:
        base *= slow.get((kind, name, occ), 1.0)
        out = [base * (1.0 + noise.gauss(0.0, jitter)) for _ in range(iterations)]
        out[0] *= warmup_factor
        return out

    def event(kind: str, name: str, occ: int, ops: list[str], base: float, debug_id: int | None = None) -> dict[str, Any]:
        t = times(kind, name, occ, base)
        return {"name": name, "kind": kind, "op_types": ops, "delegate_debug_id": debug_id, "times_us": t,
                "p50_us": statistics.median(t)}

    kernels = [event("npu_kernel", str(i), 0, list(ops), truth.uniform(40, 400), i) for i, ops in enumerate(KERNEL_OPS)]
    dump = event("profiling_dump", str(len(KERNEL_OPS)), 0, [], truth.uniform(5, 10), len(KERNEL_OPS))
    seen: dict[str, int] = {}
    cpu = []
    for name, ops in CPU_OPS:
        occ = seen.get(name, 0)
        seen[name] = occ + 1
        cpu.append(event("cpu_op", name, occ, list(ops), truth.uniform(100, 900)))
    n = iterations
    call_t = [sum(k["times_us"][i] for k in kernels) + dump["times_us"][i] + 12.0 for i in range(n)]
    call = {"name": "DELEGATE_CALL", "kind": "delegate_call", "op_types": [], "delegate_debug_id": None,
            "times_us": call_t, "p50_us": statistics.median(call_t)}
    method_t = [call_t[i] + sum(c["times_us"][i] for c in cpu) + 30.0 for i in range(n)]
    method = {"name": "Method::execute", "kind": "method", "op_types": [], "delegate_debug_id": None,
              "times_us": method_t, "p50_us": statistics.median(method_t)}
    per_iter = lambda evs: [sum(e["times_us"][i] for e in evs) for i in range(n)]  # noqa: E731
    npu_total = statistics.median(per_iter(kernels))
    total = statistics.median(method_t)
    return {
        "schema": "et-hil/profile/1", "board": board, "model": model, "simulated": True, "iterations": n,
        "time_unit": "us",
        # what the QEMU replay image's simulated Neutron buffer says of its ticks (boards/qemu.toml's clocks):
        # time base simulated-ticks/cpu=324MHz/npu=250MHz (hil.regress.timebase)
        "firmware": "replay",
        "time_scale": {"ticks_per_us": 324.0, "neutron_ticks_per_us": 250.0, "follows_clock": True, "unit": "us"},
        "events": [method, cpu[0], call, *kernels, dump, cpu[1], cpu[2]],
        "totals_us": {"method_execute": total, "npu_kernels": npu_total, "cpu_ops": statistics.median(per_iter(cpu)),
                      "delegate_overhead": 12.0, "profiling_dump": statistics.median(dump["times_us"])},
        "npu_fraction": npu_total / total,
        "cpu_fallback_ops": ["aten.convolution.default", "aten._softmax.default"],
        "memory": {"allocators": {"method_allocator": {"used": 4037, "total": 524288},
                                  "temp_allocator": {"used": 41262, "total": 524288}}, "model_size_bytes": 120000},
    }


def test_generator_is_seeded_and_shaped_like_a_profile():
    a, b, c = synth_profile(1), synth_profile(1), synth_profile(2)
    assert a == b and a != c
    kinds = {e["kind"] for e in a["events"]}
    assert kinds == {"method", "cpu_op", "delegate_call", "npu_kernel", "profiling_dump"}
    assert all(len(e["times_us"]) == a["iterations"] and min(e["times_us"]) > 0 for e in a["events"])
    # same program, different noise: the true costs agree within the jitter
    for ea, ec in zip(a["events"], c["events"]):
        assert abs(ea["p50_us"] - ec["p50_us"]) / ea["p50_us"] < 0.05
