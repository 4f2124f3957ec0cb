"""Inputs holding NaN or infinity, and files that hold no tensors at all: refused in one line naming the
input and its count, or (allowed) run with numerics that say "outputs not finite" instead of figures.

Truths: the NaN/inf are planted by hand at known places and counted in the comments; the messages are
written out here; the table line is what a user must read.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from hil.base.errors import InputError
from hil.numerics.budget import numerics_violations
from hil.numerics.check import RunInputs, numerics_section, wants_references
from hil.numerics.gate import output_snr
from hil.records.numerics_section import numerics_line
from hil.records.tensors import ProgramIO, TensorSpec, check_inputs, check_inputs_path, load_inputs_file, tensor_bytes
from hil.target.tensor_io import OutputTensor

PROGRAM = ProgramIO(inputs=(TensorSpec(6, (2, 4)), TensorSpec(4, (2,))), outputs=(TensorSpec(6, (1, 3)),))


def planted() -> torch.Tensor:
    x = torch.zeros(2, 4)
    x[0, 1] = torch.nan  # 1 NaN
    x[1, 2], x[1, 3] = torch.inf, -torch.inf  # 2 infinities: 3 non-finite values of 8
    return x


def test_an_input_holding_nan_or_infinity_is_refused_naming_it_and_the_counts() -> None:
    with pytest.raises(InputError) as caught:
        check_inputs(["image", "ids"], [planted(), torch.tensor([1, 2])], PROGRAM, "file in.npz")
    assert str(caught.value) == (
        "file in.npz: image holds 3 non-finite value(s) of 8 (1 NaN, 2 infinite); refused before any image is built "
        "(--allow-nonfinite-inputs or pytest --hil-allow-nonfinite-inputs lets them through)")


def test_allowed_nonfinite_inputs_are_the_bytes_given() -> None:
    checked = check_inputs(["image", "ids"], [planted(), torch.tensor([1, 2])], PROGRAM, "f", allow_nonfinite=True)
    # float32 NaN is 0x7fc00000 (little endian: 00 00 c0 7f), at element 1 of the first row.
    assert checked[0].data[4:8] == bytes([0, 0, 0xC0, 0x7F]) and len(checked[0].data) == 32


def test_integer_inputs_are_never_non_finite() -> None:
    checked = check_inputs(["image", "ids"], [torch.zeros(2, 4), torch.tensor([-1, 2**40])], PROGRAM, "f")
    assert len(checked) == 2


def test_nan_outputs_read_as_outputs_not_finite_never_as_top1_100_percent() -> None:
    out = torch.tensor([[torch.nan, torch.nan, torch.inf]])  # 2 NaN, 1 infinity
    outputs = (OutputTensor(0, TensorSpec(6, (1, 3)), tensor_bytes(out)),)
    inputs = RunInputs("file x.pt", (), (torch.zeros(2, 4),))
    assert not wants_references(inputs, outputs, reason=None)  # no reference is needed: the model is never run
    section = numerics_section(inputs, outputs, None, reason=None)
    assert section["non_finite_outputs"] == [{"index": 0, "dtype": "float32", "shape": [1, 3], "nan": 2, "inf": 1}]
    assert numerics_line(section) == "numerics: outputs not finite (output 0: 2 NaN, 1 infinite)"
    assert "top1_agreement" not in section["vs_eager"] and section["vs_eager"]["snr_db"] is None
    assert output_snr({"numerics": section}) == float("-inf")  # the SNR gate sees the worst figure
    broken = numerics_violations(section, 40.0, 1e-3)
    assert [(what, measured) for what, measured, *_ in broken] == [
        ("output SNR vs eager PyTorch (min)", None), ("output max abs error vs eager PyTorch", None)]


@pytest.mark.parametrize(("content", "says"), [
    (bytes(range(256)) * 4, "UnpicklingError: WeightsUnpickler error: Unsupported operand 0"),  # byte 0 is no opcode
    (b"", "EOFError: no detail (an empty or cut-off file?)"),
])
def test_an_unreadable_pt_is_one_line_without_torchs_advice(tmp_path: Path, content: bytes, says: str) -> None:
    path = tmp_path / "inputs.pt"
    path.write_bytes(content)
    with pytest.raises(InputError) as caught:
        load_inputs_file(path)
    assert str(caught.value) == f"inputs file {path} cannot be read: {says}"


@pytest.mark.parametrize(("name", "content", "says"), [
    ("in.npz", b"hello", "is not a .npz (a zip of .npy arrays, numpy.savez): it starts with b'hell'"),
    ("in.npz", b"", "is not a .npz (a zip of .npy arrays, numpy.savez): an empty file"),
    ("in.pt", None, "is a folder, not a file"),
    ("in.csv", b"1,2\n", "is not .pt or .npz"),
    ("gone.pt", "absent", "does not exist"),
])
def test_a_file_that_cannot_be_an_inputs_file_is_named_without_torch(tmp_path: Path, name: str, content, says: str):
    path = tmp_path / name
    if content is None:
        path.mkdir()
    elif content != "absent":
        path.write_bytes(content)
    with pytest.raises(InputError) as caught:
        check_inputs_path(path)
    assert str(caught.value) == f"inputs file {path} {says}"
    with pytest.raises(InputError) as again:  # the loader says the same
        load_inputs_file(path)
    assert str(again.value) == str(caught.value)


def test_a_real_npz_and_a_zip_pt_pass_the_path_check(tmp_path: Path):
    path = tmp_path / "in.npz"
    path.write_bytes(b"PK\x03\x04" + bytes(26))  # a zip's local file header signature (APPNOTE.TXT 4.3.7)
    assert check_inputs_path(path) == path
    (tmp_path / "in.pt").write_bytes(b"\x80\x02")  # a legacy torch.save pickle: the .pt's content is torch's to judge
    assert check_inputs_path(tmp_path / "in.pt") == tmp_path / "in.pt"
