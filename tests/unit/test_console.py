"""The console parser reads the NXP example's lines (FACTS.md section 5) from LF and CR LF logs."""

from __future__ import annotations

import pytest

from hil.analysis.console import parse_console

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
