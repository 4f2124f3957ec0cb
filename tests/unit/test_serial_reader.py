"""SerialReader against a real local TCP server (pyserial socket://), the way it reads QEMU's UART."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from hil.base.errors import TargetError, TimeoutExpired
from hil.target.capture import RunContext
from hil.target.ports import free_tcp_port
from hil.target.serial_reader import SerialReader


class ConsoleServer:
    """A one-client TCP server standing in for a UART: accept, send, hang up, come back."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.listener: socket.socket | None = None
        self.client: socket.socket | None = None
        self._accepted = threading.Event()

    def listen(self) -> "ConsoleServer":
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", self.port))
        sock.listen(1)
        self.listener = sock
        self._accepted.clear()
        threading.Thread(target=self._accept, daemon=True).start()
        return self

    def _accept(self) -> None:
        assert self.listener is not None
        try:
            self.client, _ = self.listener.accept()
        except OSError:
            return
        self._accepted.set()

    def send(self, data: bytes, timeout: float = 5.0) -> None:
        assert self._accepted.wait(timeout), "reader never connected"
        assert self.client is not None
        self.client.sendall(data)

    def hang_up(self) -> None:
        """Close the client connection and stop listening (the USB port vanished / QEMU exited)."""
        for sock in (self.client, self.listener):
            if sock is not None:
                sock.close()
        self.client = self.listener = None


@pytest.fixture
def console(tmp_path: Path) -> Iterator[tuple[ConsoleServer, RunContext]]:
    """A console served over a real socket and the run context a read-out takes (for test_tensor_io.py and
    test_etdump_stream_reader.py, which import it)."""
    server = ConsoleServer(free_tcp_port()).listen()
    reader = SerialReader(f"socket://127.0.0.1:{server.port}", tmp_path / "serial.log").start()
    yield server, RunContext("qemu", "hil_etdump_ready", reader, tmp_path / "mi.log", tmp_path / "firmware.elf")
    reader.close()
    server.hang_up()


@pytest.fixture
def server():
    srv = ConsoleServer(free_tcp_port()).listen()
    yield srv
    srv.hang_up()


def url(srv: ConsoleServer) -> str:
    return f"socket://127.0.0.1:{srv.port}"


def test_every_byte_reaches_log_and_text(server, tmp_path: Path) -> None:
    payload = b"".join(f"line {i}\r\n".encode() for i in range(300)) + b"bad \xff\xfe byte\r\n" + "µs done\r\n".encode()
    log = tmp_path / "serial.log"
    with SerialReader(url(server), log) as reader:
        for start in range(0, len(payload), 97):  # odd chunk sizes, split multibyte characters too
            server.send(payload[start:start + 97])
        server.hang_up()
        assert reader.wait_ended(5.0)
        assert reader.bytes_read == len(payload)
        assert log.read_bytes() == payload
        assert reader.text.endswith("µs done\r\n")
        assert "bad \ufffd\ufffd byte" in reader.text
        assert reader.lines[0] == "line 0" and reader.lines[299] == "line 299"
        assert reader.tail(2) == ["bad \ufffd\ufffd byte", "µs done"]
        assert "port lost" in (reader.end_reason or "")


def test_expect_moves_forward(server, tmp_path: Path) -> None:
    with SerialReader(url(server), tmp_path / "serial.log") as reader:
        server.send(b"value 1\r\nother\r\nvalue 2\r\n")
        assert reader.expect(r"value (\d)", 5).group(1) == "1"
        assert reader.expect(r"value (\d)", 5).group(1) == "2"
        server.send(b"value 3\r\n")
        assert reader.expect(r"value (\d)", 5).group(1) == "3"


def test_expect_timeout_names_pattern_tail_and_log(server, tmp_path: Path) -> None:
    log = tmp_path / "serial.log"
    with SerialReader(url(server), log) as reader:
        server.send(b"".join(f"boot {i}\r\n".encode() for i in range(15)))
        reader.expect("boot 14", 5)
        start = time.monotonic()
        with pytest.raises(TimeoutExpired) as info:
            reader.expect(r"Program complete", 0.5)
        elapsed = time.monotonic() - start
    message = str(info.value)
    assert 0.45 <= elapsed < 2.0
    assert "'Program complete'" in message and "0.5 s" in message
    assert str(log) in message
    assert "boot 14" in message and "boot 5" in message and "boot 4" not in message  # the last 10 lines


def test_expect_fails_fast_when_port_closes(server, tmp_path: Path) -> None:
    with SerialReader(url(server), tmp_path / "serial.log") as reader:
        server.send(b"last words\r\n")
        reader.expect("last words", 5)
        server.hang_up()
        start = time.monotonic()
        with pytest.raises(TargetError) as info:
            reader.expect("never printed", 30)
    assert time.monotonic() - start < 3.0
    assert not isinstance(info.value, TimeoutExpired)
    assert "port closed" in str(info.value) and "last words" in str(info.value)


def test_reconnect_reopens_same_url_and_marks_log(server, tmp_path: Path) -> None:
    log = tmp_path / "serial.log"
    with SerialReader(url(server), log, reconnect=True, reconnect_timeout=10, reconnect_delay=0.05) as reader:
        server.send(b"before reset\r\n")
        reader.expect("before reset", 5)
        server.hang_up()  # the board resets: its USB serial port goes away ...
        time.sleep(0.4)
        server.listen()  # ... and comes back under the same name
        server.send(b"", timeout=10)  # wait for the reader to be back: pyserial's open() drops what arrives during it
        time.sleep(0.1)
        server.send(b"after reset\r\n")
        reader.expect("after reset", 10)
        assert reader.reconnects == 1
        assert not reader.ended
        assert "[hil serial" not in reader.text  # markers live in the log only
    logged = log.read_text()
    assert logged.index("before reset") < logged.index("[hil serial: port lost") < logged.index("after reset")
    assert "[hil serial: reopened" in logged


def test_reconnect_gives_up_after_its_timeout(server, tmp_path: Path) -> None:
    log = tmp_path / "serial.log"
    with SerialReader(url(server), log, reconnect=True, reconnect_timeout=0.5, reconnect_delay=0.05) as reader:
        server.send(b"only line\r\n")
        reader.expect("only line", 5)
        server.hang_up()
        assert reader.wait_ended(5.0)
        with pytest.raises(TargetError, match="port closed"):
            reader.expect("more", 5)
    assert "gave up reopening" in log.read_text()


def test_open_times_out_naming_the_url(tmp_path: Path) -> None:
    port = free_tcp_port()  # nobody listens here
    start = time.monotonic()
    with pytest.raises(TargetError) as info:
        SerialReader(f"socket://127.0.0.1:{port}", tmp_path / "serial.log", open_timeout=0.5).start()
    assert time.monotonic() - start < 3.0
    assert f"socket://127.0.0.1:{port}" in str(info.value)


def test_a_reader_that_will_not_reconnect_closes_without_pyserials_pause(server, tmp_path: Path, monkeypatch) -> None:
    """pyserial's socket close() sleeps 0.3 s for a quick reconnect; only a reconnecting reader may wait it."""
    from serial.urlhandler import protocol_socket

    pauses: list[float] = []

    class Clock:
        def __getattr__(self, name):
            return getattr(time, name)

        @staticmethod
        def sleep(seconds: float) -> None:
            pauses.append(seconds)

    monkeypatch.setattr(protocol_socket, "time", Clock())
    reader = SerialReader(f"socket://127.0.0.1:{server.port}", tmp_path / "serial.log").start()
    server.send(b"Program complete\n")
    reader.expect("Program complete", timeout=5)
    server.hang_up()  # QEMU exited: the reader sees the port go
    reader.close()
    assert pauses == [] and reader._port is None
    again = ConsoleServer(free_tcp_port()).listen()
    keeps = SerialReader(f"socket://127.0.0.1:{again.port}", tmp_path / "again.log", reconnect=True).start()
    keeps.close()
    again.hang_up()
    assert pauses == [0.3]  # pyserial's own close, kept for a reader that reconnects


def test_the_result_line_is_read_whole_though_it_arrives_in_pieces(server, tmp_path: Path) -> None:
    """A UART delivers a line in pieces: the size is read from the whole line, not from its first digits."""
    from hil.target.capture import EtdumpResult, RunContext, check_console_result

    reader = SerialReader(f"socket://127.0.0.1:{server.port}", tmp_path / "serial.log").start()
    try:
        server.send(b"Result buf: 0x38000000, size: 18")
        time.sleep(0.3)  # let the reader see the first piece alone (a pause, not a timed assertion)
        server.send(b"32, crc32: 0x0badf00d\r\n")
        ctx = RunContext(board="qemu", breakpoint="hil_etdump_ready", serial=reader, transcript=tmp_path / "mi.log")
        checked = check_console_result(ctx, EtdumpResult(0x38000000, 1832), timeout=5)
    finally:
        reader.close()
    assert (checked.address, checked.size, checked.crc32) == (0x38000000, 1832, 0x0BADF00D)


# In a child whose files may hold 100 bytes (RLIMIT_FSIZE: the kernel's own short write, then EFBIG), a console on
# a pseudo-terminal (a real tty, whose reads take all that waits, as a USB serial port's do): the log must take the
# 100 bytes it can and say why it stops, not drop the rest of a write without a word (a socket's reads are 1 byte).
SHORT_DISK = """
import json, os, resource, signal, sys, time
from pathlib import Path
from hil.target.serial_reader import SerialReader
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
resource.setrlimit(resource.RLIMIT_FSIZE, (100, 100))
board, port = os.openpty()
with SerialReader(os.ttyname(port), Path(sys.argv[1])) as reader:
    os.write(board, b"a" * 90)
    while reader.bytes_read < 90:
        time.sleep(0.01)
    time.sleep(0.2)  # the reader waits in its next read
    os.write(board, b"b" * 60)  # one write: all 60 wait for the reader's next read, 10 fit the log
    deadline = time.monotonic() + 10
    while reader.bytes_read < 150 and time.monotonic() < deadline:
        time.sleep(0.01)
    error = reader.log_error
print(json.dumps({"read": reader.bytes_read, "errno": error.errno if error else None}))
"""


def test_a_log_whose_disk_fills_mid_write_keeps_what_fit_and_says_why(tmp_path: Path) -> None:
    import errno
    import json
    import subprocess
    import sys

    log = tmp_path / "serial.log"
    done = subprocess.run([sys.executable, "-c", SHORT_DISK, str(log)], capture_output=True, text=True, timeout=60,
                          check=True, cwd=Path(__file__).resolve().parents[2])
    assert json.loads(done.stdout) == {"read": 150, "errno": errno.EFBIG}, done.stderr
    assert log.read_bytes() == b"a" * 90 + b"b" * 10
