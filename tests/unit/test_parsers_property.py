"""Every parser of target output refuses instead of crashing: property-based tests with hypothesis.

What a board hands the harness (console bytes, a dumped ETDump, Neutron records and their metadata)
and what a run folder holds (manifest.json) can be garbled, truncated or someone else's. For any such
input each parser must either return a result or raise the harness's own HilError, whose message the
CLI prints in one line; any other exception is a traceback for the user and fails here.

Seeded (`derandomize=True`: the same examples every run, no example database), bounded in examples
and per-example time, so they run inside `make test` in seconds.
"""

from __future__ import annotations

import json
import math
from datetime import timedelta
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hil.records.console import ConsoleFacts, parse_console
from hil.records.events import decode_event_metadata
from hil.analysis.profile import build_profile, read_etdump
from hil.replay.neutron_records import KOPC_CALLARGS, events_from_records, pack_records, unpack_records
from hil.base.errors import HilError
from hil.records.manifest import read_manifest
from hil.regress.runs import read_manifest as read_run_manifest
from hil.target.capture import RESULT_LINE

PROPERTY = settings(derandomize=True, database=None, max_examples=200, deadline=timedelta(seconds=2),
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
# The Inspector runs flatc per example: fewer of those.
SLOW_PROPERTY = settings(PROPERTY, max_examples=40, deadline=timedelta(seconds=20))

# Numbers as a garbled console can carry them: huge, hex, with leading zeros, beyond int()'s 4300 digits.
NUMBERS = st.one_of(
    st.integers(0, 2**64).map(str), st.integers(0, 2**64).map(hex),
    st.text("0123456789", min_size=1, max_size=6000), st.text("0123456789abcdefABCDEFx", min_size=1, max_size=40),
    st.sampled_from(["(nil)", "nan", "inf", "1e999", "-1", "0838000000", "", "0x", "9" * 400 + ".5"]),
)
# The console line protocol (firmware/common/hil_protocol.h) with any numbers in its slots.
TEMPLATES = [
    "Result buf: {}, size: {}", "Result buf: {}, size: {}, crc32: {}", "Core/NPU Frequency: {} MHz",
    "     Inference time: {} us", "method_allocator_used: Total {} ({} B); Used {} ({} B); Used/Total {} %",
    "temp_allocator Addr: {} - {}", "Model Addr: {} - {}", "Model Size: {} ({} B)",
    "Setting up planned buffer {}, size {}.", "Run config: iterations {}, warm-up {} (set by the debugger)",
    "HIL error: run config out of range (iterations {}, warm-up {}, at most {} runs)", "Program complete, exiting.",
]


@st.composite
def protocol_line(draw: st.DrawFn) -> str:
    template = draw(st.sampled_from(TEMPLATES))
    line = template.format(*(draw(NUMBERS) for _ in range(template.count("{}"))))
    if draw(st.booleans()):  # and a byte or two garbled on the wire
        at = draw(st.integers(0, len(line)))
        line = line[:at] + draw(st.text(max_size=3)) + line[at + draw(st.integers(0, 2)):]
    return line


CONSOLES = st.one_of(
    st.text(max_size=2000),
    st.lists(st.one_of(protocol_line(), st.text(max_size=80)), max_size=30).map("\r\n".join),
)


@PROPERTY
@given(CONSOLES)
def test_the_console_parser_never_raises(text: str) -> None:
    facts = parse_console(text)
    assert isinstance(facts, ConsoleFacts)
    assert facts.clock_mhz is None or math.isfinite(facts.clock_mhz)
    assert all(math.isfinite(t) for t in facts.inference_times_us)


@PROPERTY
@given(st.lists(protocol_line(), min_size=1, max_size=5).map("\r\n".join))
def test_the_harness_result_line_reads_only_numbers_it_can_hold(text: str) -> None:
    """capture.RESULT_LINE feeds int(); whatever it matches must convert."""
    for match in RESULT_LINE.finditer(text):
        address = 0 if match.group(1) == "(nil)" else int(match.group(1), 0)
        assert address >= 0 and int(match.group(2)) >= 0
        assert match.group(3) is None or int(match.group(3), 16) < 2**32


def test_the_known_crashes_are_skipped_lines() -> None:
    facts = parse_console("Result buf: 0838000000, size: 12\nModel Size: 0x1 (" + "9" * 5000 + " B)\n")
    assert (facts.result_buf, facts.result_size) == (838000000, 12) and facts.model_size is None


@pytest.fixture(scope="module")
def program(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, bytes, object]:
    """A real ETDump / ETRecord pair: cifar10, CPU only, run by the host runtime."""
    from hil.aot.export import export_model
    from hil.replay.simulated import simulated_buffer

    compiled = export_model("cifar10", delegate="none")
    buffer = simulated_buffer(compiled, iterations=2, clock_mhz=324, seed=0, jitter=0.0)
    folder = tmp_path_factory.mktemp("program")
    return folder, compiled.etrecord_path, buffer.etdump, buffer.time_scale


@SLOW_PROPERTY
@given(CONSOLES)
def test_a_profile_with_any_console_is_built_or_refused(program, text: str) -> None:
    folder, etrecord, etdump, scale = program
    (folder / "trace.etdump").write_bytes(etdump)
    try:
        profile = build_profile(folder / "trace.etdump", etrecord, board="qemu", model="cifar10", simulated=True,
                                time_scale=scale, console=parse_console(text))
    except HilError:
        return
    json.dumps(profile, allow_nan=False)  # what profile.json will hold: real numbers only


@st.composite
def damaged(draw: st.DrawFn, data: bytes) -> bytes:
    """`data` cut short, with bytes overwritten, or with bytes inserted."""
    blob = bytearray(data)
    for _ in range(draw(st.integers(1, 4))):
        at = draw(st.integers(0, len(blob)))
        how = draw(st.sampled_from(["cut", "overwrite", "insert"]))
        if how == "cut":
            del blob[at:]
        elif how == "overwrite":
            blob[at:at + 4] = draw(st.binary(min_size=1, max_size=4))
        else:
            blob[at:at] = draw(st.binary(min_size=1, max_size=16))
    return bytes(blob)


@SLOW_PROPERTY
@given(st.data())
def test_a_damaged_etdump_is_read_or_refused(program, data: st.DataObject) -> None:
    folder, etrecord, etdump, scale = program
    (folder / "damaged.etdump").write_bytes(data.draw(st.one_of(damaged(etdump), st.binary(max_size=64))))
    try:
        read_etdump(folder / "damaged.etdump")
        build_profile(folder / "damaged.etdump", etrecord, board="qemu", model="cifar10", simulated=True,
                      time_scale=scale)
    except HilError:
        pass


@PROPERTY
@given(st.binary(max_size=400), st.integers(-2**40, 2**40), st.integers(-2**40, 2**40))
def test_neutron_records_are_read_or_refused(buf: bytes, pal_before: int, pal_after: int) -> None:
    try:
        records = unpack_records(buf)
    except HilError:
        assert len(buf) % 16  # only a buffer of partial records is refused
        return
    assert pack_records(records) == buf
    events = events_from_records(records, pal_before, pal_after)
    assert len(events) == (sum(r.stop.op_code == KOPC_CALLARGS for r in records) + 1 if records else 0)


METADATA = st.one_of(
    st.none(), st.binary(max_size=8), st.text(max_size=8), st.integers(), st.floats(),
    st.lists(st.one_of(st.integers(), st.floats(), st.text(max_size=3), st.none(), st.lists(st.integers(), max_size=2)),
             max_size=6),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=3),
)


@PROPERTY
@given(st.lists(METADATA, max_size=5))
def test_neutron_metadata_always_decodes(raw_per_run: list) -> None:
    decoded = decode_event_metadata(raw_per_run)
    assert decoded is None or isinstance(decoded.get("kind"), str)


JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=10),
                    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner, max_size=4),
                    max_leaves=12)


@PROPERTY
@given(st.one_of(st.binary(max_size=300), JSON.map(lambda v: json.dumps(v).encode()),
                 st.integers(1, 200_000).map(lambda depth: b"[" * depth)))
def test_a_manifest_is_read_or_refused(tmp_path_factory: pytest.TempPathFactory, blob: bytes) -> None:
    folder = tmp_path_factory.mktemp("manifest", numbered=True)
    (folder / "manifest.json").write_bytes(blob)
    for read in (read_manifest, read_run_manifest):
        try:
            assert isinstance(read(folder), dict)
        except HilError:
            pass
