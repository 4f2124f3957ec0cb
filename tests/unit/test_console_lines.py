"""The console parser's raw lines and its tolerance, against logs written out by hand: each line is kept as
the target printed it with only its line ending taken off, and a garbled line costs that line only."""

from __future__ import annotations

from hil.records.console import parse_console


def test_lines_are_kept_as_printed_with_only_the_line_ending_removed() -> None:
    """Indentation and trailing blanks are the firmware's (serial.log shows them); CR LF, LF, and a lone CR
    left at the end when the capture stopped between CR and LF all end a line."""
    text = "et-hil on NXP i.MX\r\n     Inference time: 907 us  \r\n     Detected: cat (99%)\t\nProgram complete, exiting.\r"
    facts = parse_console(text)
    assert facts.lines == [
        "et-hil on NXP i.MX",
        "     Inference time: 907 us  ",
        "     Detected: cat (99%)\t",
        "Program complete, exiting.",
    ]
    assert facts.inference_times_us == [907] and facts.program_complete


def test_a_garbled_number_skips_its_line_and_the_lines_after_it_still_count() -> None:
    """400 nines overflow a float to inf (a finite double ends near 1.8e308) and 5000 digits exceed
    Python's 4300-digit int() limit: both lines are dropped, the ones after them are read."""
    text = "\n".join([
        "Core/NPU Frequency: " + "9" * 400 + " MHz",
        "Inference time: 905 us",
        "Model Size: 0x18e00 (" + "9" * 5000 + " B)",
        "Inference time: 907 us",
        "Model Size: 0x18e00 (101888 B)",
        "Program complete, exiting.",
    ])
    facts = parse_console(text)
    assert facts.clock_mhz is None
    assert facts.inference_times_us == [905, 907]
    assert facts.model_size == 101888  # 0x18e00 = 1 * 65536 + 8 * 4096 + 14 * 256 = 101888
    assert facts.program_complete
