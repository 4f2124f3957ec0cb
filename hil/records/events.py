"""What each Inspector event is (method, CPU operator, delegate call, NPU kernel, profiling dump,
another delegate's operator).

The Inspector gives names, op types and the backend id of every delegated event, but no notion of
"this ran on the NPU". Only a Neutron backend runs on the NPU, so the backend id decides: ExecuTorch's
`NeutronBackend` (backends/nxp) and this project's simulated `NeutronSimBackend`. Their runtime
(NeutronBackend.cpp) posts one delegate event per Neutron kernel, named by its index ("0", "1", ...),
plus a last one covering the profiling dump; each carries one byte of metadata: 0 = profiling dump,
n = kernel function code n. A 2-byte SDK-version form (major<<8 | minor<<4 | patch) is proposed
upstream for the last event. Metadata from a foreign or future runtime must never crash the analysis,
so anything else decodes as "invalid" and classification falls back to the event's position and op
types. Any other delegate (XNNPACK, say) runs on the CPU: its events are `delegate_op`, judged like
every other event and never counted as NPU time.
"""

from __future__ import annotations

from typing import Any, Iterable

METHOD = "method"
CPU_OP = "cpu_op"
DELEGATE_CALL = "delegate_call"
NPU_KERNEL = "npu_kernel"
PROFILING_DUMP = "profiling_dump"
DELEGATE_OP = "delegate_op"
KINDS = (METHOD, CPU_OP, DELEGATE_CALL, NPU_KERNEL, PROFILING_DUMP, DELEGATE_OP)
# Kinds that live inside a DELEGATE_CALL (shown indented under it, never sorted by their own clock).
DELEGATED_KINDS = (NPU_KERNEL, PROFILING_DUMP, DELEGATE_OP)

# Backend ids whose delegate events are Neutron NPU kernels: ExecuTorch's real backend
# (`DelegationSpec(NeutronBackend.__name__, ...)` in backends/nxp) and the simulated one
# (hil.aot.neutron_sim.BACKEND_ID, not imported here: it would load torch).
NEUTRON_BACKEND_IDS = frozenset({"NeutronBackend", "NeutronSimBackend"})

METHOD_EXECUTE = "Method::execute"
DELEGATE_CALL_NAME = "DELEGATE_CALL"
OPERATOR_CALL_NAME = "OPERATOR_CALL"
NATIVE_CALL_PREFIX = "native_call_"
# Framework events outside Method::execute (the "Default" block): load time, not inference.
LOAD_EVENT_NAMES = ("Program::load_method", "Method::init")


def metadata_bytes(raw: Any) -> bytes | None:
    """Normalise one run's raw delegate metadata as the Inspector hands it over.

    Seen here: `bytes` when the profile event carried metadata, `""` when it did not; a list
    of ints is what flatc's JSON form holds, accepted for safety.
    """
    if raw is None or raw == "" or raw == b"":
        return None
    if isinstance(raw, (bytes, bytearray)):
        return bytes(raw)
    if isinstance(raw, str):
        return raw.encode("latin-1", errors="replace")
    if isinstance(raw, Iterable):
        try:
            return bytes(int(x) & 0xFF for x in raw)
        except (TypeError, ValueError):
            return None
    return None


def decode_neutron_metadata(data: bytes | None) -> dict[str, Any]:
    """Decode a Neutron delegate event's metadata; never raises.

    1 byte: 0 -> profiling dump, n -> kernel with function code n.
    2 bytes (little-endian, as the runtime writes a uint16 on the Cortex-M33):
    major<<8 | minor<<4 | patch -> the SDK version (proposed form for the last event).
    """
    if data is None or len(data) == 0:
        return {"kind": "none"}
    if len(data) == 1:
        if data[0] == 0:
            return {"kind": "profiling_dump"}
        return {"kind": "kernel", "function_code": data[0]}
    if len(data) == 2:
        value = int.from_bytes(data, "little")
        major, minor, patch = value >> 8, (value >> 4) & 0xF, value & 0xF
        return {"kind": "sdk_version", "version": f"{major}.{minor}.{patch}", "raw": data.hex()}
    return {"kind": "invalid", "raw": data.hex()}


def decode_event_metadata(raw_per_run: list[Any]) -> dict[str, Any] | None:
    """Decode the metadata of a delegated event over all runs (the first run's, flagged if runs differ)."""
    decoded = [decode_neutron_metadata(metadata_bytes(raw)) for raw in raw_per_run]
    if not decoded or all(d["kind"] == "none" for d in decoded):
        return None
    first = decoded[0]
    if any(d != first for d in decoded[1:]):
        return {**first, "varies_between_runs": True}
    return first


def is_neutron(backend: str | None) -> bool:
    """Does this backend id name a Neutron NPU backend (real or simulated)?"""
    return backend in NEUTRON_BACKEND_IDS


def classify(
    name: str,
    *,
    is_delegated: bool,
    backend: str | None,
    op_types: list[str],
    metadata: dict[str, Any] | None,
    is_last_of_delegate: bool,
) -> str:
    """Return one of KINDS for an Inspector event.

    Delegated events of a Neutron backend are NPU kernels unless their metadata says "profiling
    dump" (or an SDK version, the proposed form of the same last event); without usable metadata
    the last delegated event of a delegate call that maps to no op is taken as the dump, because
    that is where the Neutron runtime always puts it. Delegated events of any other backend are
    `delegate_op`: nothing about them says NPU.
    """
    if name == METHOD_EXECUTE:
        return METHOD
    if name == DELEGATE_CALL_NAME:
        return DELEGATE_CALL
    if is_delegated and not is_neutron(backend):
        return DELEGATE_OP
    if is_delegated:
        kind = (metadata or {}).get("kind")
        if kind == "kernel":
            return NPU_KERNEL
        if kind in ("profiling_dump", "sdk_version"):
            return PROFILING_DUMP
        if is_last_of_delegate and not op_types:
            return PROFILING_DUMP
        return NPU_KERNEL
    return CPU_OP


def native_op_name(event_name: str) -> str | None:
    """`native_call_add.out` -> `add`; None for names that are not kernel wrappers."""
    if not event_name.startswith(NATIVE_CALL_PREFIX):
        return None
    base = event_name[len(NATIVE_CALL_PREFIX):]
    return base.split(".", 1)[0]


def op_type_matches(event_name: str, op_types: list[str]) -> bool | None:
    """Does a kernel wrapper's name fit the ETRecord's op types for its instruction?

    None when the event says nothing (not a `native_call_*`). Used to catch an ETDump paired
    with the ETRecord of another model: the instruction ids then point at unrelated ops.
    """
    op = native_op_name(event_name)
    if op is None:
        return None
    op = op.lstrip("_")
    for op_type in op_types:
        parts = op_type.split(".")
        candidates = parts[1:-1] if len(parts) >= 3 else parts
        if any(c.lstrip("_") == op or c.lstrip("_").startswith(op) for c in candidates):
            return True
    return False


def kernel_op_types(event_name: str, op_types: list[str]) -> list[str]:
    """The op types a CPU event's own kernel runs: those of `op_types` that fit its `native_call_*` name.

    Why: in an int8 program a quantize/dequantize kernel shares debug handles with the operator beside it, so the
    Inspector lists that neighbour (often a delegated convolution or linear) among the event's op types; a CPU
    fallback list built from them named operators the NPU ran. When the name says nothing (not a kernel wrapper)
    or nothing fits, the op types are kept as given: the pairing check (hil.analysis.pairing) speaks for those.
    """
    fitting = [t for t in op_types if op_type_matches(event_name, [t])]
    return fitting or list(op_types)


def unique(items: Iterable[str]) -> list[str]:
    """Order-preserving de-duplication (DELEGATE_CALL lists each delegated op once per handle)."""
    seen: dict[str, None] = {}
    for item in items:
        seen.setdefault(item, None)
    return list(seen)


def short_op(op_type: str) -> str:
    """`aten.convolution.default` -> `convolution`: the namespace and overload rarely matter to a reader."""
    parts = op_type.split(".")
    return parts[1] if len(parts) >= 3 else op_type
