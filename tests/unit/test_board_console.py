"""hil_board.console against a real serial reader on a local TCP server (pyserial socket://), as QEMU's UART
is read: expect with one pattern or several, expect_exact, not_matching, the board file's default timeout,
and errors that name the log file and show the last lines."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest

from hil.boards.console import Console, UnexpectedOutput
from hil.base.errors import TargetError, TimeoutExpired
from hil.target.serial_reader import SerialReader
from test_serial_reader import server, url  # noqa: F401  (the fixture and its URL)

BOOT = b"boot 1.2\r\nmodel loaded\r\nInference time: 812 us\r\nresult [0.5] (a+b)*c\r\nPASS\r\n"


@pytest.fixture
def console(server, tmp_path: Path):  # noqa: F811
    reader = SerialReader(url(server), tmp_path / "serial.log").start()
    server.send(BOOT)
    try:
        yield Console(reader, default_timeout=0.5)
    finally:
        reader.close()


def test_expect_moves_forward_and_returns_the_match(console):
    assert console.expect(r"Inference time: (\d+) us").group(1) == "812"
    with pytest.raises(TimeoutExpired):
        console.expect(r"model loaded")  # before the previous match: not seen again


def test_a_list_of_patterns_returns_the_first_to_appear_and_says_which(console):
    match = console.expect([r"PASS", r"FAIL: (.*)", r"Inference time: \d+"])
    assert match.re.pattern == r"Inference time: \d+" and match.group(0) == "Inference time: 812"
    assert console.expect([r"FAIL", "PASS"]).re.pattern == "PASS"


def test_expect_exact_takes_text_literally(console):
    with pytest.raises(TimeoutExpired):
        console.expect(r"[0.5] (a+b)*c", timeout=0.3)  # as a regex, it means something else
    console.expect("boot")
    assert console.expect_exact(["no such line", "[0.5] (a+b)*c"]).group(0) == "[0.5] (a+b)*c"


def test_not_matching_fails_when_the_unwanted_line_comes_first(console, tmp_path):
    with pytest.raises(UnexpectedOutput) as caught:
        console.expect("PASS", not_matching=[r"Inference time: \d+ us", "HardFault"])
    text = str(caught.value)
    assert ("'PASS' expected, but 'Inference time: \\\\d+ us' appeared first (console line 3: 'Inference time: 812 us')"
            in text)
    assert str(tmp_path / "serial.log") in text and "  | PASS" in text
    console.expect("Inference time")
    assert console.expect("PASS", not_matching="model loaded")  # an unwanted line already passed is no failure


def test_the_default_timeout_is_the_consoles_and_the_error_names_the_log_and_the_last_lines(console, tmp_path):
    started = time.monotonic()
    with pytest.raises(TimeoutExpired) as caught:
        console.expect("never printed")
    assert time.monotonic() - started >= 0.5
    text = str(caught.value)
    assert f"(log {tmp_path / 'serial.log'})" in text and "not seen within 0.5 s" in text
    assert text.splitlines()[-2:] == ["  | result [0.5] (a+b)*c", "  | PASS"]


def test_a_closed_port_ends_the_wait_at_once(server, tmp_path):  # noqa: F811
    reader = SerialReader(url(server), tmp_path / "serial.log").start()  # no reconnect: a hang-up ends it
    try:
        server.send(b"last words\r\n")
        Console(reader).expect("last words")
        server.hang_up()
        assert reader.wait_ended(5)
        with pytest.raises(TargetError, match=re.escape("never appeared: the port closed")):
            Console(reader, default_timeout=600).expect("more")
    finally:
        reader.close()


def test_expect_exact_errors_show_the_text_as_written(console):
    with pytest.raises(TimeoutExpired) as caught:
        console.expect_exact(["THIS NEVER APPEARS", "(a+b)*c?"], timeout=0.2)
    assert "'THIS NEVER APPEARS' or '(a+b)*c?' not seen within 0.2 s" in str(caught.value)
    assert "\\" not in str(caught.value).splitlines()[0]  # re.escape's backslashes never reach the user
    with pytest.raises(UnexpectedOutput) as caught:
        console.expect_exact("PASS", not_matching="[0.5] (a+b)")
    assert "'PASS' expected, but '[0.5] (a+b)' appeared first (console line 4: '[0.5] (a+b)')" in str(caught.value)
