"""The console parser reads the lines NXP's RT700 ExecuTorch example prints (clock, allocators, inference
times, model size) from LF and CR LF logs."""

from __future__ import annotations

import pytest

from hil.records.console import RunConfig, parse_console

NXP_EXAMPLE = """\
CIFARNET example using a ExecuTorch model
Model buffer loaded, has 11 methods
Running method forward
Setting up planned buffer 0, size 3088.
Method loaded.
Preparing inputs...
Input prepared.
Starting the model execution...
Model executed successfully.
Core/NPU Frequency: 324 MHz
method_allocator Addr: 0x20080000 - 0x20100000
method_allocator_used: Total 0x80000 (524288 B); Used 0xfc5 (4037 B); Used/Total 0 %
temp_allocator Addr: 0x20000000 - 0x20080000
temp_allocator_used: Total 0x80000 (524288 B); Used 0xa12e (41262 B); Used/Total 7 %
Model Addr: 0x20430000 - 0x20448e00
Model Size: 0x18e00 (101888 B)
1 outputs:
     Inference time: 907 us
     Detected: cat (99%)
Result buf: 0x38000000, size: 1234
Program complete, exiting.
"""


@pytest.mark.parametrize("newline", ["\n", "\r\n"], ids=["lf", "crlf"])
def test_nxp_example_lines(newline: str) -> None:
    facts = parse_console(NXP_EXAMPLE.replace("\n", newline))
    assert facts.clock_mhz == 324
    assert facts.inference_times_us == [907]
    assert set(facts.allocators) == {"method_allocator", "temp_allocator"}
    method = facts.allocators["method_allocator"]
    assert (method.used, method.total) == (4037, 524288)
    assert (method.start, method.end) == (0x20080000, 0x20100000)
    temp = facts.allocators["temp_allocator"]
    assert (temp.used, temp.total) == (41262, 524288)
    assert facts.model_size == 101888
    assert facts.model_addr == 0x20430000
    assert facts.planned_buffers == {0: 3088}
    assert facts.result_buf == 0x38000000 and facts.result_size == 1234
    assert facts.program_complete is True
    assert all("\r" not in line for line in facts.lines)
    assert facts.lines[0] == "CIFARNET example using a ExecuTorch model"


def test_every_inference_time_is_kept_and_unknown_lines_ignored() -> None:
    text = "garbage \x00 line\r\nInference time: 12 us\r\nInference time: 13.5 us\r\nnoise: 5 MHz\r\n"
    facts = parse_console(text)
    assert facts.inference_times_us == [12, 13.5]
    assert facts.clock_mhz is None
    assert facts.program_complete is False
    assert facts.model_size is None and facts.result_buf is None and facts.allocators == {}


def test_partial_log_and_to_dict() -> None:
    facts = parse_console("Core/NPU Frequency: 150 MHz\nResult buf: (nil), size: 0\n")
    assert facts.clock_mhz == 150
    assert (facts.result_buf, facts.result_size) == (0, 0)
    data = facts.to_dict()
    assert "lines" not in data and data["clock_mhz"] == 150


def test_empty_text() -> None:
    facts = parse_console("")
    assert facts.clock_mhz is None and facts.inference_times_us == [] and facts.lines == [""]


HANDSHAKE_LOG = """\
et-hil profiling firmware (rt700) using an ExecuTorch model\r
Run config: iterations 7, warm-up 2 (set by the debugger)\r
Model buffer loaded, has 1 methods\r
Inference time: 900 us\r
Result buf: 0x2043a0c0, size: 51234\r
Program complete, exiting.\r
"""


def test_run_config_and_hex_result_lines() -> None:
    facts = parse_console(HANDSHAKE_LOG)
    assert facts.run_config == RunConfig(7, 2, "debugger")
    assert facts.run_config == (7, 2, "debugger")  # a plain (iterations, warmup, source) tuple too
    assert (facts.result_buf, facts.result_size) == (0x2043A0C0, 51234)
    assert facts.inference_times_us == [900] and facts.program_complete
    assert facts.to_dict()["run_config"] == (7, 2, "debugger")


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("Run config: iterations 5, warm-up 0 (defaults: no debugger wrote hil_run_config)", (5, 0, "defaults")),
        ("HIL error: run config out of range (iterations 999, warm-up 2, at most 1000 runs)", (999, 2, "refused")),
        ("Run config: iterations 3, warm-up 1 (my own words)", (3, 1, "my own words")),
    ],
)
def test_run_config_sources(line: str, expected: tuple) -> None:
    assert parse_console(f"banner\n{line}\nInference time: 5 us\n").run_config == expected


def test_old_result_forms_still_parse_and_no_run_config_is_none() -> None:
    """Logs from firmware before the handshake: `%p` printed `(nil)` or bare hex with a 0x from newlib."""
    facts = parse_console("Result buf: 0x20000000, size: 10\nResult buf: (nil), size: 0\n")
    assert (facts.result_buf, facts.result_size) == (0, 0)
    assert facts.run_config is None


@pytest.mark.parametrize(
    ("line", "addr"),
    [("Result buf: 0x38000000, size: 12", 0x38000000), ("Result buf: 0x0, size: 12", 0),
     ("Result buf: (nil), size: 12", None), ("Result buf: 0, size: 12", None)],
)
def test_the_harness_result_regex_takes_the_new_and_the_old_forms(line: str, addr: int | None) -> None:
    from hil.target.capture import RESULT_LINE

    match = RESULT_LINE.search(line)
    assert match and match.group(2) == "12"
    assert addr is None or int(match.group(1), 0) == addr


@pytest.mark.parametrize(
    ("line", "addr"),
    [("Result buf: 0x0838ABCD, size: 7", 0x0838ABCD),
     ("Result buf: 0838000000, size: 7", 838_000_000), ("Result buf: 4096, size: 7", 4096),
     ("Result buf: (nil), size: 7", 0)],
)
def test_the_result_address_is_hex_after_0x_and_decimal_otherwise(line: str, addr: int) -> None:
    """`0838000000` (a `%lu` print) is decimal 838,000,000, not an octal or a hex literal; `(nil)` is a null `%p`."""
    facts = parse_console(line + "\n")
    assert (facts.result_buf, facts.result_size) == (addr, 7)
