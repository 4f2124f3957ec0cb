"""The harness's side of the tensor handshake without a target: the console's `Inputs:` line, and inputs
checked against a program's specs.

The console is a real socket console fed with hand-written lines (a real firmware that took the inputs says
so; these are the lines of one that did not). Writing and reading tensors through GDB against the real
firmware on QEMU is in tests/system/test_numerics_qemu.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from test_serial_reader import console  # noqa: F401  (the fixture: a socket console and its run context)

from hil.base.errors import InputError, TargetError
from hil.records.tensors import ProgramIO, TensorSpec, check_inputs, tensor_from_bytes
from hil.target.tensor_io import check_inputs_echo


def test_the_echo_of_the_inputs_written_passes(console) -> None:
    server, ctx = console
    server.send(b"Run config: iterations 1, warm-up 0 (set by the debugger)\r\nInputs: 2 tensor(s) set by the debugger\r\n")
    check_inputs_echo(ctx, 2, timeout=5)


@pytest.mark.parametrize(("line", "complaint"), [
    (b"Inputs: 1 tensor(s) filled with byte 0x0 (fallback: no debugger wrote hil_io)\r\n",
     "the harness wrote 1 input(s) but the firmware says 'Inputs: 1 tensor(s) filled with byte 0x0"),
    (b"Inputs: 3 tensor(s) set by the debugger\r\n", "the harness wrote 1 input(s) but the firmware says 'Inputs: 3"),
])
def test_a_firmware_that_kept_its_fill_or_took_other_inputs_fails(console, line: bytes, complaint: str) -> None:
    server, ctx = console
    server.send(line)
    with pytest.raises(TargetError, match="board 'qemu'") as caught:
        check_inputs_echo(ctx, 1, timeout=5)
    assert complaint in str(caught.value)


def test_no_inputs_line_at_all_fails_naming_what_was_written(console) -> None:
    _, ctx = console
    with pytest.raises(TargetError, match=r"never printed 'Inputs: \.\.\.' after the harness wrote 1 input"):
        check_inputs_echo(ctx, 1, timeout=0.5)


PROGRAM = ProgramIO(inputs=(TensorSpec(6, (1, 3, 32, 32)), None, TensorSpec(4, (2,))), outputs=(TensorSpec(6, (1, 10)),))


def test_inputs_are_matched_to_the_programs_tensor_inputs_in_order() -> None:
    image, ids = torch.ones(1, 3, 32, 32), torch.tensor([7, 8])
    checked = check_inputs(["x", "ids"], [image, ids], PROGRAM, "file in.npz")
    assert [(t.index, t.spec) for t in checked] == [(0, PROGRAM.inputs[0]), (2, PROGRAM.inputs[2])]
    # int64 7 and 8, little endian: the bytes the target gets.
    assert checked[1].data == bytes([7, 0, 0, 0, 0, 0, 0, 0, 8, 0, 0, 0, 0, 0, 0, 0])
    assert len(checked[0].data) == 12288  # 3 x 32 x 32 float32
    assert tensor_from_bytes(checked[1].data, checked[1].spec).tolist() == [7, 8]


@pytest.mark.parametrize(("tensors", "message"), [
    ([torch.ones(1, 3, 16, 16), torch.tensor([1, 2])],
     "x is float32 [1, 3, 16, 16], but the program's input 0 is float32 [1, 3, 32, 32]; refused before flashing"),
    ([torch.ones(1, 3, 32, 32), torch.tensor([1, 2], dtype=torch.int32)],
     "ids is int32 [2], but the program's input 2 is int64 [2]"),
    ([torch.ones(1, 3, 32, 32)], "1 tensor(s) given, the program takes 2 tensor input(s) (float32 [1, 3, 32, 32], int64 [2])"),
])
def test_inputs_that_do_not_fit_are_refused_naming_the_input(tensors, message: str) -> None:
    with pytest.raises(InputError) as caught:
        check_inputs(["x", "ids"][:len(tensors)], tensors, PROGRAM, "file in.npz")
    assert message in str(caught.value) and str(caught.value).startswith("file in.npz: ")


def test_a_users_image_without_hil_io_runs_and_says_why_no_outputs(tmp_path) -> None:
    from hil.firmware.qemu_image import build_qemu_image
    from hil.numerics.check import skip_reason

    old = build_qemu_image(b"\x10\0\0\0ED00" + bytes(64), ["Inference time: 907 us"], runs=1, cache=tmp_path)
    reason = skip_reason(enabled=True, firmware="user", delegate="none", elf=old)
    assert reason == f"image {old.name} has no hil_io: it predates the tensor handshake, rebuild it"
    assert skip_reason(enabled=True, firmware="replay", delegate="none", elf=old) == "replay image"
    assert skip_reason(enabled=False, firmware="user", delegate="none", elf=old) == "numerics check off (--no-numerics)"
