"""Synthesize the ETDump an RT700 would write for a program delegated to the *simulated* Neutron backend.

Why: the QEMU road must carry an ETDump that the Inspector decodes exactly like a board's, yet nothing
can run a ``NeutronSimBackend`` program.  So we walk the program's own instruction list (from the
.pte) and write the events the runtime would post, with times from ``hil.replay.cost_model``:

* block "Default": ``Method::init`` inside ``Program::load_method`` (chain -1, instruction 0);
* one block "Execute" per iteration, in the order the runtime *ends* events:
  per CPU instruction ``native_call_<op>.<overload>`` then ``OPERATOR_CALL`` (chain 0, instruction_id =
  index in the chain, names as the host runtime writes them); per delegate instruction the Neutron
  events (``delegate_debug_id_int`` = kernel index, 1-byte metadata, no name), produced from simulated
  16-byte profile records by the port of NeutronBackend.cpp (``neutron_records``), then ``DELEGATE_CALL``;
  last ``Method::execute`` (chain -1, instruction 0).

Two clocks, as on a board: CPU events are PAL ticks = core clock cycles at ``clock_mhz``; Neutron
events are ticks of the NPU's timer at ``npu_clock_mhz`` (the cost model's NPU costs are NPU cycles).
The simulated board runs them at different rates on purpose (``[simulation].npu_clock_mhz`` in
boards/qemu.toml), so reading one clock's ticks at the other's rate changes every number a test
checks.  The Neutron timer is started in step with the PAL counter, so kernel events, converted to
time, nest inside their ``DELEGATE_CALL``.  The last delegate event (the profiling dump) does not:
its end adds the whole PAL-timed ``neutronRunBlocking`` duration to a Neutron timestamp, as the
runtime does (see ``neutron_records``).

The bytes are made by the bundled ``flatc --binary --size-prefixed`` from the
``executorch.devtools.etdump.schema_flatcc`` dataclasses: the layout a runtime writes, which the
Inspector requires (it rejects a buffer without the size prefix).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from executorch.devtools.etdump import schema_flatcc as fb
from executorch.exir import schema
from executorch.exir._serialize._program import deserialize_pte_binary

from hil.aot.neutron_sim import BACKEND_ID, payload_of
from hil.replay import cost_model as cm
from hil.replay.neutron_records import KernelSlot, ProfileRecord, U32_MASK, events_from_records, layout_delegate_call
from hil.base.errors import AnalysisError, ModelError
from hil.records.etdump_flatc import serialize_etdump

SIMULATION_FORMAT = "et-hil/neutron-sim-simulation/1"
BOOT_MS = 20
"""Simulated time from reset to load_method, so timestamps do not start at 0."""


def _numel(value: Any) -> int:
    return math.prod(value.sizes) if isinstance(value, schema.Tensor) else 0


def _cpu_op_size(plan: schema.ExecutionPlan, call: schema.KernelCall, base: str) -> cm.OpSize:
    """Sizes of a CPU operator from its argument values (out variants: the output is the last tensor)."""
    vals = [plan.values[i].val for i in call.args]
    tensors = [v for v in vals if isinstance(v, schema.Tensor)]
    out = _numel(tensors[-1]) if tensors else 0
    if base == "convolution" and len(tensors) >= 2:
        return cm.OpSize(macs=out * math.prod(tensors[1].sizes[1:]), elements=out)
    if base in ("addmm", "mm", "bmm") and len(tensors) >= 2:
        lhs = tensors[1] if base == "addmm" else tensors[0]
        return cm.OpSize(macs=out * lhs.sizes[-1], elements=out)
    return cm.OpSize(elements=max([out] + [_numel(t) for t in tensors[:1]]))


def load_plan(pte: Path | str | bytes) -> tuple[schema.Program, schema.ExecutionPlan, str]:
    """The 'forward' plan of a .pte (segments are folded back in by deserialize_pte_binary)."""
    where = "<bytes>" if isinstance(pte, bytes) else str(pte)
    try:
        data = pte if isinstance(pte, bytes) else Path(pte).read_bytes()
        program = deserialize_pte_binary(data).program
    except (OSError, ValueError, RuntimeError) as exc:
        raise ModelError(f"cannot read ExecuTorch program {where}: {exc}") from exc
    plans = {p.name: p for p in program.execution_plan}
    plan = plans.get("forward") or program.execution_plan[0]
    return program, plan, where


def program_steps(program: schema.Program, plan: schema.ExecutionPlan, where: str) -> list[dict]:
    """One entry per profiled instruction: CPU op (name, size) or Neutron delegate (payload kernels)."""
    steps: list[dict] = []
    for chain_index, chain in enumerate(plan.chains):
        for instr_id, instr in enumerate(chain.instructions):
            args = instr.instr_args
            if isinstance(args, schema.KernelCall):
                op = plan.operators[args.op_index]
                base = op.name.split("::")[-1]
                steps.append({"kind": "cpu", "chain": chain_index, "instruction_id": instr_id,
                              "name": f"native_call_{base}.{op.overload}", "op": f"{op.name}.{op.overload}",
                              "base": base, "size": _cpu_op_size(plan, args, base)})
            elif isinstance(args, schema.DelegateCall):
                delegate = plan.delegates[args.delegate_index]
                if delegate.id != BACKEND_ID:
                    raise ModelError(f"{where}: instruction {instr_id} calls backend {delegate.id!r}; only "
                                     f"{BACKEND_ID} programs can be simulated (run others on a board)")
                try:
                    payload = payload_of(program, delegate)
                except ValueError as exc:
                    raise ModelError(f"{where}: delegate at instruction {instr_id}: {exc}") from None
                _refuse_non_int8(payload["kernels"], where, instr_id)
                steps.append({"kind": "neutron", "chain": chain_index, "instruction_id": instr_id,
                              "kernels": payload["kernels"]})
    return steps


def _refuse_non_int8(kernels: list[dict], where: str, instr_id: int) -> None:
    """The cost model counts int8 MACs (cost_model.NPU_MACS_PER_CYCLE): a kernel of another type (a float kernel
    of a payload made before neutron-sim took int8 only) would get an int8 time no Neutron gives it."""
    for kernel in kernels:
        if kernel.get("dtype") != "int8":
            raise ModelError(f"{where}: delegate at instruction {instr_id}: kernel {kernel.get('index')} "
                             f"({kernel.get('function')}) is {kernel.get('dtype') or 'float'}, not int8; the simulated "
                             "NPU times int8 kernels only: export the program again (with --quantize)")


def _check_etrecord(etrecord: Any, steps: list[dict], where: str) -> None:
    """Refuse an ETRecord from another export: its delegate map must have kernels + 1 entries per call."""
    from executorch.devtools.etrecord import ETRecord, parse_etrecord

    record = etrecord if isinstance(etrecord, ETRecord) else parse_etrecord(str(etrecord))
    delegate_map = (record._delegate_map or {}).get("forward", {})
    for step in (s for s in steps if s["kind"] == "neutron"):
        entry = delegate_map.get(step["instruction_id"]) or delegate_map.get(str(step["instruction_id"]))
        want = len(step["kernels"]) + 1
        got = len(entry.get("delegate_map") or {}) if entry else 0
        if got != want:
            raise AnalysisError(f"ETRecord {etrecord} does not match {where}: delegate at instruction "
                                f"{step['instruction_id']} has {got} map entries, the program has {want - 1} kernels + dump")


def _profile(name: str | None, start: int, end: int, *, chain: int, instr: int,
             delegate_id: int = -1, metadata: bytes | None = None) -> fb.Event:
    return fb.Event(profile_event=fb.ProfileEvent(
        name=name, chain_index=chain, instruction_id=instr, delegate_debug_id_int=delegate_id,
        delegate_debug_id_str=None, delegate_debug_metadata=metadata, start_time=start, end_time=end),
        allocation_event=None, debug_event=None)


class _Timeline:
    """Walks the program once per iteration, advancing a PAL tick clock and collecting events.

    `npu_per_pal` is NPU timer ticks per PAL tick (npu_clock_mhz / clock_mhz).
    """

    def __init__(self, steps: list[dict], model: cm.CostModel, start: int, npu_per_pal: float = 1.0) -> None:
        self.steps, self.model, self.t, self.npu_per_pal = steps, model, start, npu_per_pal
        self.stats: dict[tuple[int, int], dict[str, list]] = {}

    def _note(self, step: dict, key: str, value: int) -> None:
        self.stats.setdefault((step["chain"], step["instruction_id"]), {}).setdefault(key, []).append(value)

    def _cpu(self, step: dict, events: list[fb.Event]) -> None:
        loc = {"chain": step["chain"], "instr": step["instruction_id"]}
        op_start = self.t
        native_start = op_start + self.model.fixed(cm.CPU_DISPATCH_ENTER_CYCLES)
        native_end = native_start + self.model.cpu_op(step["base"], step["size"])
        self.t = native_end + self.model.fixed(cm.CPU_DISPATCH_EXIT_CYCLES)
        events += [_profile(step["name"], native_start, native_end, **loc),
                   _profile("OPERATOR_CALL", op_start, self.t, **loc)]
        self._note(step, "ticks", native_end - native_start)
        self._note(step, "dispatch", (self.t - op_start) - (native_end - native_start))

    def _neutron(self, step: dict, events: list[fb.Event]) -> None:
        loc = {"chain": step["chain"], "instr": step["instruction_id"]}
        call_start = self.t
        pal_before = call_start + self.model.fixed(cm.CPU_DELEGATE_ENTER_CYCLES)
        pal_launch = pal_before + self.model.fixed(cm.CPU_DRIVER_LAUNCH_CYCLES)
        npu_launch = round(pal_launch * self.npu_per_pal)  # the NPU timer runs in step with the PAL counter
        slots, records, last_stop = delegate_layout(step["kernels"], self.model, npu_launch)
        npu_run_in_pal = math.ceil((last_stop - npu_launch) / self.npu_per_pal)
        pal_after = pal_launch + npu_run_in_pal + self.model.fixed(cm.NPU_DUMP_CYCLES_PER_RECORD * len(records))
        self.t = pal_after + self.model.fixed(cm.CPU_DELEGATE_EXIT_CYCLES)
        for ev in events_from_records(records, pal_before, pal_after):
            events.append(_profile(None, ev.start_time, ev.end_time, delegate_id=ev.delegate_debug_id,
                                   metadata=ev.metadata, **loc))
            self._note(step, f"event_{ev.delegate_debug_id}", ev.end_time - ev.start_time)
        for i, slot in enumerate(slots):
            self._note(step, f"compute_{i}", slot.compute_ticks)
            self._note(step, f"fetch_{i}", slot.fetch_ticks)
        events.append(_profile("DELEGATE_CALL", call_start, self.t, **loc))
        self._note(step, "ticks", self.t - call_start)
        self._note(step, "records", len(records))

    def iteration(self) -> tuple[fb.RunData, int]:
        events: list[fb.Event] = []
        method_start = self.t
        self.t += self.model.fixed(cm.CPU_METHOD_ENTER_CYCLES)
        for step in self.steps:
            (self._cpu if step["kind"] == "cpu" else self._neutron)(step, events)
            self.t += self.model.fixed(cm.CPU_INSTRUCTION_GAP_CYCLES)
        self.t += self.model.fixed(cm.CPU_METHOD_EXIT_CYCLES)
        events.append(_profile("Method::execute", method_start, self.t, chain=-1, instr=0))
        duration = self.t - method_start
        self.t += cm.CPU_ITERATION_GAP_CYCLES
        return fb.RunData(name="Execute", bundled_input_index=-1, allocators=None, events=events), duration


def delegate_layout(kernels: list[dict], model: cm.CostModel, npu_launch: int
                    ) -> tuple[list[KernelSlot], list[ProfileRecord], int]:
    """One delegate call's kernels as the cost model times them, and the profile records they write from
    Neutron time `npu_launch` on: the replay's synthesis and the runtime image's simulated backend
    (hil.firmware.sim_neutron_table) lay a call out with this one rule. Returns the last record's stop."""
    slots = [KernelSlot(k["function_code"], model.npu_compute(_size(k)), model.npu_fetch(_size(k))) for k in kernels]
    records, last_stop = layout_delegate_call(
        slots, npu_launch, setup_ticks=model.fixed(cm.NPU_GRAPH_SETUP_CYCLES), sync_ticks=model.fixed(cm.NPU_SYNC_CYCLES),
        gap_ticks=cm.NPU_RECORD_GAP_CYCLES)
    return slots, records, last_stop


def _size(kernel: dict) -> cm.OpSize:
    return cm.OpSize(macs=kernel.get("macs", 0), elements=kernel.get("elements", 0), weight_bytes=kernel.get("weight_bytes", 0))


def _load_block(n_instructions: int, model: cm.CostModel, start: int) -> tuple[fb.RunData, int]:
    """Program::load_method wrapping Method::init, as the runtime logs them before any Execute block."""
    init_start = start + model.fixed(300)
    init_end = init_start + model.fixed(cm.CPU_INIT_METHOD_CYCLES_PER_INSTRUCTION * max(1, n_instructions))
    load_end = init_end + model.fixed(cm.CPU_LOAD_METHOD_CYCLES_PER_INSTRUCTION * max(1, n_instructions))
    events = [_profile("Method::init", init_start, init_end, chain=-1, instr=0),
              _profile("Program::load_method", start, load_end, chain=-1, instr=0)]
    return fb.RunData(name="Default", bundled_input_index=-1, allocators=None, events=events), load_end


def synthesize_neutron_etdump(
    pte: Path | str | bytes, etrecord: Any = None, *, iterations: int = 1, clock_mhz: float = 324.0,
    npu_clock_mhz: float | None = None, seed: int = 0, jitter: float = 0.0,
) -> tuple[bytes, dict]:
    """Return (size-prefixed ETDump bytes, simulation dict for simulation.json).

    `npu_clock_mhz` is the Neutron timer's rate (default: the core clock, `clock_mhz`).

    `etrecord` (path or ETRecord) is optional; when given it must belong to `pte` (AnalysisError otherwise).
    Same arguments -> same bytes.  With jitter > 0 each iteration draws new costs from `seed`.
    """
    if iterations < 1:
        raise ValueError(f"iterations must be >= 1, got {iterations}")
    program, plan, where = load_plan(pte)
    steps = program_steps(program, plan, where)
    if etrecord is not None:
        _check_etrecord(etrecord, steps, where)
    model = cm.CostModel(seed=seed, jitter=jitter)
    load_block, t = _load_block(sum(len(c.instructions) for c in plan.chains), model, int(clock_mhz * 1000 * BOOT_MS))
    npu_clock_mhz = float(npu_clock_mhz or clock_mhz)
    timeline = _Timeline(steps, model, t + cm.CPU_ITERATION_GAP_CYCLES, npu_clock_mhz / clock_mhz)
    runs, durations = [load_block], []
    for _ in range(iterations):
        run, duration = timeline.iteration()
        runs.append(run)
        durations.append(duration)
    if max(timeline.t, timeline.t * timeline.npu_per_pal) > U32_MASK:
        raise ValueError(f"{iterations} iterations exceed the 32-bit Neutron timer ({timeline.t} ticks); use fewer")
    etdump = serialize_etdump(fb.ETDumpFlatCC(version=0, run_data=runs))
    return etdump, _simulation(steps, timeline.stats, durations, clock_mhz=clock_mhz,
                               npu_clock_mhz=npu_clock_mhz, seed=seed, jitter=jitter, iterations=iterations)


def _simulation(steps: list[dict], stats: dict, durations: list[int], **params: Any) -> dict:
    """What simulation.json holds: per kernel and per CPU op the ticks of every iteration."""
    cpu_ops, delegates = [], []
    for step in steps:
        st = stats[(step["chain"], step["instruction_id"])]
        if step["kind"] == "cpu":
            cpu_ops.append({"instruction_id": step["instruction_id"], "name": step["name"], "op": step["op"],
                            "macs": step["size"].macs, "elements": step["size"].elements, "ticks": st["ticks"],
                            "dispatch_ticks": st["dispatch"]})
            continue
        kernels = [{**k, "ticks": st[f"event_{k['index']}"], "compute_ticks": st[f"compute_{i}"],
                    "fetch_ticks": st[f"fetch_{i}"]} for i, k in enumerate(step["kernels"])]
        n = len(kernels)
        delegates.append({"instruction_id": step["instruction_id"], "backend": BACKEND_ID, "kernels": kernels,
                          "profiling_dump": {"index": n, "function_code": 0, "ticks": st[f"event_{n}"]},
                          "delegate_call_ticks": st["ticks"], "records_per_call": st["records"][0]})
    return {"format": SIMULATION_FORMAT, "simulated": True, "backend": BACKEND_ID, **params,
            "time_unit": "ticks: CPU events at clock_mhz, Neutron events (kernels, dump) at npu_clock_mhz", "method_execute_ticks": durations,
            "delegates": delegates, "cpu_ops": cpu_ops, "cost_model": cm.constants()}
