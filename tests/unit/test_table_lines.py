"""The table's lines a CI log shows for QEMU runs, written out by hand: the header naming the image that ran
(the runtime image with its -icount rate, or a replayed ETDump), the numerics line, the delegated-outputs
note, the over-100% marker and the per-iteration console times. Column widths are the table's
(event 30, kind 15, op types 29, p50 12 + a space, share 6 + a space; totals: label 38, value 12, unit 5, share 7).
"""

from __future__ import annotations

from typing import Any

from hil.cli.table import format_table

# hil/firmware/sim_neutron_table.py's note for a simulated NPU, as a runtime-image profile carries it.
SIMULATED_NPU_NOTE = "delegated outputs are not computed (simulated NPU): only its timing is"


def _event(name: str, kind: str, p50: float, ops: tuple[str, ...] = ()) -> dict[str, Any]:
    return {"name": name, "kind": kind, "method": "forward", "op_types": list(ops), "p50_us": p50}


def _qemu_profile(**fields: Any) -> dict[str, Any]:
    """One forward method on the QEMU board: Method::execute 1200 us, a delegate call of 900 us whose NPU
    kernel took 800 us, and a CPU add of 250 us; `fields` add or replace profile keys."""
    profile: dict[str, Any] = {
        "model": "cifarnet", "board": "qemu", "simulated": True, "iterations": 3, "time_unit": "us",
        "events": [
            _event("Method::execute", "method", 1200.0),
            _event("DELEGATE_CALL", "delegate_call", 900.0, ("aten.convolution.default",)),
            _event("0", "npu_kernel", 800.0, ("aten.convolution.default",)),
            _event("native_call_add.out", "cpu_op", 250.0, ("aten.add.Tensor",)),
        ],
        "totals_us": {"method_execute": 1200.0, "npu_kernels": 800.0, "cpu_ops": 250.0,
                      "delegate_calls": 900.0, "unattributed": 50.0},
        "npu_fraction": 800.0 / 1200.0,
        "cpu_fallback_ops": ["aten.add.Tensor"],
    }
    profile.update(fields)
    return profile


def _header(profile: dict[str, Any]) -> str:
    return format_table(profile).splitlines()[0]


def test_a_runtime_image_run_under_icount_line_for_line() -> None:
    """-icount shift=2: 4 ns of virtual time per instruction, so 1 us = 1000 / 4 = 250 instructions.
    Shares: 900/1200 = 75.0%, 800/1200 = 66.7%, 250/1200 = 20.8%, 50/1200 = 4.2%; fraction 800/1200 = 0.667."""
    profile = _qemu_profile(
        firmware="runtime",
        time_base={"kind": "emulated instructions", "tick_mhz": 20.0, "icount_shift": 2,
                   "ns_per_instruction": 4, "instructions_per_us": 250.0},
        delegated_outputs=SIMULATED_NPU_NOTE,
        console={"inference_times_us": [1201, 1199.5]},
        numerics={"status": "not computed", "reason": "the simulated NPU computes no outputs"},
    )
    assert format_table(profile).splitlines() == [
        "cifarnet on qemu (simulated) [runtime firmware on the emulated Cortex-M33; 1 us = 250 emulated "
        "instructions]: 3 iteration(s), times in us",
        "event                         kind           op types                           p50 us  share",
        "----------------------------- -------------- ---------------------------- ------------ ------",
        "Method::execute               method                                          1200.000 100.0%",
        "DELEGATE_CALL                 delegate_call  convolution                       900.000  75.0%",
        "  0                           npu_kernel     convolution                       800.000  66.7%",
        "native_call_add.out           cpu_op         add                               250.000  20.8%",
        "",
        "Method::execute                           1200.000 us     100.0%",
        "NPU kernels                                800.000 us      66.7%",
        "CPU operators                              250.000 us      20.8%",
        "delegate calls                             900.000 us      75.0%",
        "unattributed                                50.000 us       4.2%",
        "NPU fraction                                 0.667",
        "CPU fallback ops: add",
        "console inference time: 1201, 1199.5 us",
        "numerics: outputs not computed (the simulated NPU computes no outputs)",
        "note: delegated outputs are not computed (simulated NPU): only its timing is",
    ]


def test_a_runtime_image_without_icount_says_its_times_are_emulated_time() -> None:
    """QEMU without -icount: time_base has a note but no instructions_per_us (hil/firmware/qemu_firmware.py)."""
    no_icount = {"kind": "emulated instructions", "tick_mhz": 20.0, "icount_shift": None,
                 "note": "QEMU without -icount: virtual time follows the host's clock"}
    expected = ("cifarnet on qemu (simulated) [runtime firmware on the emulated Cortex-M33; emulated time]: "
                "3 iteration(s), times in us")
    assert _header(_qemu_profile(firmware="runtime", time_base=no_icount)) == expected
    assert _header(_qemu_profile(firmware="runtime")) == expected  # a profile that wrote no time_base at all


def test_a_replayed_etdump_is_named_in_the_header() -> None:
    profile = _qemu_profile(firmware="replay", time_base={"kind": "replayed", "note": "an ETDump made on the host"})
    assert _header(profile) == "cifarnet on qemu (simulated) [replayed ETDump]: 3 iteration(s), times in us"


def test_the_numerics_line_gives_the_worst_figures_against_both_references() -> None:
    """It comes after the console times and before the delegated-outputs note. SNR 38.31 -> 38.3 dB (.1f),
    max abs 0.00312 (.3g), cosine 0.9999871 -> 0.999987 (.6f), top-1 agreement 1.0 -> 100%."""
    profile = _qemu_profile(
        firmware="replay",
        console={"inference_times_us": [1200]},
        numerics={"status": "computed",
                  "vs_eager": {"snr_db": 38.31, "max_abs_error": 0.00312, "cosine": 0.9999871, "top1_agreement": 1.0},
                  "vs_host_runtime": {"bit_exact": True}},
        delegated_outputs="computed by the host runtime",
    )
    assert format_table(profile).splitlines()[-4:] == [
        "CPU fallback ops: add",
        "console inference time: 1200 us",
        "numerics: vs eager SNR 38.3 dB, max abs 0.00312, cos 0.999987, top-1 100%; vs host runtime bit-exact",
        "note: computed by the host runtime",
    ]


def test_a_run_over_a_second_prints_whole_microseconds_not_an_exponent() -> None:
    """1234567 us is 1.23 s: printed as 1234567, never as 1.23457e+06; a fraction keeps its digits."""
    lines = format_table(_qemu_profile(console={"inference_times_us": [1234567, 1234567.0, 907.25]})).splitlines()
    assert lines[-1] == "console inference time: 1234567, 1234567, 907.25 us"


def test_events_without_a_method_execute_get_no_share_and_no_over_100_marker() -> None:
    """An event's share is of its own method's Method::execute; with none there is no whole to be over,
    so the share cells are empty and no line says over 100% (a total of 0 or none is no whole either)."""
    profile = _qemu_profile(
        events=[_event("native_call_add.out", "cpu_op", 50.0), _event("1", "profiling_dump", 70.0)],
        totals_us={"cpu_ops": 50.0, "profiling_dump": 70.0},
        npu_fraction=None, cpu_fallback_ops=[],
    )
    assert format_table(profile).splitlines()[3:] == [
        "native_call_add.out           cpu_op                                            50.000",
        "  1                           profiling_dump                                    70.000",
        "",
        "CPU operators                               50.000 us",
        "profiling dump (not in other totals)        70.000 us",
        "NPU fraction                                   n/a",
        "CPU fallback ops: none",
    ]
    profile["totals_us"] = {"method_execute": 0.0, "cpu_ops": 50.0}
    assert format_table(profile).splitlines()[6:8] == [
        "Method::execute                              0.000 us",
        "CPU operators                               50.000 us",
    ]


def test_a_sub_microsecond_method_still_marks_a_profiling_dump_over_it() -> None:
    """A tiny model timed on the host: Method::execute 0.5 us, the Neutron profiling dump 0.75 us,
    so 0.75 / 0.5 = 150.0% on both the event row and the totals line."""
    profile = _qemu_profile(
        events=[_event("Method::execute", "method", 0.5), _event("1", "profiling_dump", 0.75)],
        totals_us={"method_execute": 0.5, "profiling_dump": 0.75},
        npu_fraction=None, cpu_fallback_ops=[],
    )
    assert format_table(profile).splitlines()[3:8] == [
        "Method::execute               method                                             0.500 100.0%",
        "  1                           profiling_dump over 100%: overlaps kernels         0.750 150.0%",
        "",
        "Method::execute                              0.500 us     100.0%",
        "profiling dump (not in other totals)         0.750 us     150.0%  over 100%: overlaps the kernels",
    ]
