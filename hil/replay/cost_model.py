"""A deterministic cost model in clock cycles, for the simulated RT700 ETDump.

Why a model and not a measurement: in CI there is no board and no Neutron runtime, yet the profile
path (records -> events -> Inspector -> profile.json) must carry plausible, *reproducible* numbers
whose every value can be recomputed from this file.  The constants are assumptions, not measurements:
they give the right orders of magnitude (an NPU kernel is tens of times faster than the same layer on
the Cortex-M33; a softmax on the CPU is slow per element) and nothing more.  CPU costs are cycles of
the core clock (PAL ticks); NPU costs (``npu_*``) are cycles of the NPU, counted by the simulated
Neutron timer at its own rate (``[simulation].npu_clock_mhz``), as a board's two timers are.

Run-to-run variation: ``jitter`` is a relative sigma; each cost is multiplied by ``1 + N(0, jitter)``
(clamped at 0.5) drawn from one seeded ``random.Random``, in the fixed order the caller asks for costs.
``jitter=0`` draws nothing, so the result depends only on the sizes.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

# --- Neutron NPU (assumed eIQ Neutron N3-64: 64 int8 MACs per cycle) --------------------------------
NPU_MACS_PER_CYCLE = 64
"""int8 multiply-accumulates per NPU cycle. The RT700's NPU is the eIQ Neutron N3-64 (ExecuTorch backends/nxp/
README.md, "Supported NXP platforms"); 64 is read from that name, an assumption: the real figure is the
converter's target data (NeutronTargetSpec.get_num_macs() in backends/nxp/backend/neutron_target_spec.py, from
NXP's eIQ Neutron SDK, which CI does not have). Only int8 kernels are timed with it: a payload kernel whose dtype
is not int8 is refused (hil.replay.neutron_etdump), since no Neutron runs a float operator."""
NPU_ELEMENTS_PER_CYCLE = 16
"""Element-wise / pooling / reduction throughput (vector unit)."""
NPU_KERNEL_LAUNCH_CYCLES = 600
"""Fixed cost of starting one kernel (argument fetch, DMA descriptor setup)."""
NPU_FETCH_BYTES_PER_CYCLE = 8
"""Weight DMA from system RAM into NPU memory."""
NPU_FETCH_SETUP_CYCLES = 120
NPU_GRAPH_SETUP_CYCLES = 2_000
"""Loading the microcode / graph descriptors once per delegate call."""
NPU_SYNC_CYCLES = 300
NPU_RECORD_GAP_CYCLES = 8
"""Idle cycles between two profile records (firmware bookkeeping)."""
NPU_DUMP_CYCLES_PER_RECORD = 1_800
"""Printing the profile data after the run ("Profiling dump", the last delegate event)."""

# --- Cortex-M33 running the ExecuTorch portable kernels (float) -------------------------------------
CPU_CYCLES_PER_MAC = 6.0
CPU_OP_OVERHEAD_CYCLES = 350
"""Kernel entry: argument unpacking, output resize."""
CPU_CYCLES_PER_ELEMENT = {
    "_softmax": 60.0,  # exp + division per element
    "constant_pad_nd": 4.0,
    "view_copy": 2.0,
    "permute_copy": 5.0,
    "_clone_dim_order": 3.0,
    "_native_batch_norm_legit_no_training": 9.0,
    "max_pool2d_with_indices": 12.0,
    "avg_pool2d": 12.0,
    "mean": 4.0,
}
CPU_DEFAULT_CYCLES_PER_ELEMENT = 6.0
CPU_DISPATCH_ENTER_CYCLES = 90
"""Between OPERATOR_CALL start and the kernel's own (native_call_*) start."""
CPU_DISPATCH_EXIT_CYCLES = 40
CPU_INSTRUCTION_GAP_CYCLES = 60
"""Executor loop between two instructions."""
CPU_METHOD_ENTER_CYCLES = 400
CPU_METHOD_EXIT_CYCLES = 250
CPU_DELEGATE_ENTER_CYCLES = 900
"""DELEGATE_CALL start -> neutronRunBlocking: input copies, cache maintenance."""
CPU_DELEGATE_EXIT_CYCLES = 700
"""neutronRunBlocking return -> DELEGATE_CALL end: output copies, posting the events."""
CPU_DRIVER_LAUNCH_CYCLES = 250
"""neutronRunBlocking entry -> the first Neutron record."""
CPU_LOAD_METHOD_CYCLES_PER_INSTRUCTION = 1_500
CPU_INIT_METHOD_CYCLES_PER_INSTRUCTION = 1_100
CPU_ITERATION_GAP_CYCLES = 5_000
"""Between two Method::execute calls (the app's loop)."""

JITTER_CLAMP = 0.5


@dataclass(frozen=True)
class OpSize:
    """The sizes a cost depends on; zeros where a term does not apply."""

    macs: int = 0
    elements: int = 0
    weight_bytes: int = 0


class CostModel:
    """Cycles for Neutron kernels and CPU operators, with optional seeded jitter."""

    def __init__(self, *, seed: int = 0, jitter: float = 0.0) -> None:
        if jitter < 0:
            raise ValueError(f"jitter must be >= 0 (a relative sigma), got {jitter}")
        self.seed = seed
        self.jitter = jitter
        self._rng = random.Random(seed)

    def _vary(self, cycles: float) -> int:
        """Apply one jitter draw; never below 1 cycle so every event has a duration."""
        if self.jitter:
            factor = 1.0 + self._rng.gauss(0.0, self.jitter)
            cycles *= min(max(factor, 1.0 - JITTER_CLAMP), 1.0 + JITTER_CLAMP)
        return max(1, round(cycles))

    def fixed(self, cycles: int) -> int:
        """A fixed overhead (dispatch, launch...), varied like every other cost."""
        return self._vary(cycles)

    def npu_compute(self, size: OpSize) -> int:
        """One kernel: launch + MAC-bound part + element-bound part."""
        return self._vary(
            NPU_KERNEL_LAUNCH_CYCLES + size.macs / NPU_MACS_PER_CYCLE + size.elements / NPU_ELEMENTS_PER_CYCLE
        )

    def npu_fetch(self, size: OpSize) -> int:
        """Weight DMA before a kernel; 0 (no record) for kernels without weights."""
        if size.weight_bytes <= 0:
            return 0
        return self._vary(NPU_FETCH_SETUP_CYCLES + size.weight_bytes / NPU_FETCH_BYTES_PER_CYCLE)

    def cpu_op(self, op_name: str, size: OpSize) -> int:
        """A portable kernel on the Cortex-M33; `op_name` is the ATen name without namespace/overload."""
        per_element = CPU_CYCLES_PER_ELEMENT.get(op_name, CPU_DEFAULT_CYCLES_PER_ELEMENT)
        return self._vary(CPU_OP_OVERHEAD_CYCLES + size.macs * CPU_CYCLES_PER_MAC + size.elements * per_element)


def constants() -> dict[str, object]:
    """All constants, for simulation.json, so a reader can recompute every number."""
    return {k: v for k, v in globals().items() if k.isupper() and isinstance(v, (int, float, dict))}
