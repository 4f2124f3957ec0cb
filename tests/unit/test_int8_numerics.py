"""hil.numerics.int8 against hand-computed figures: errors in quantization steps (LSB), top-1, the bound's verdict,
and the budget violation an int8 program beyond its bound gives."""

from __future__ import annotations

import pytest
import torch

from hil.numerics.budget import numerics_violations
from hil.numerics.int8 import BOUND_LSB, int8_figures, lsb_error


def test_an_error_of_two_steps_of_an_eighth_is_two_lsb() -> None:
    # |0.25 - 0.0| = 0.25 = 2 x 0.125 (by hand); the other elements agree
    assert lsb_error(torch.tensor([0.0, 0.25, 0.5]), torch.tensor([0.0, 0.0, 0.5]), 0.125) == 2.0


def test_a_zero_scale_is_refused() -> None:
    with pytest.raises(ValueError, match="positive"):
        lsb_error(torch.zeros(2), torch.zeros(2), 0.0)


def test_figures_per_reference_and_the_verdict_against_the_quantized_eager_module() -> None:
    target = [torch.tensor([[0.1, 0.6, 0.3]]), torch.tensor([1.0])]
    eager = [torch.tensor([[0.1, 0.55, 0.3]]), torch.tensor([7.0])]  # 0.05 / 0.05 = 1 LSB on output 0
    host = [torch.tensor([[0.7, 0.6, 0.3]]), torch.tensor([1.0])]  # 0.6 / 0.05 = 12 LSB, other top-1 class
    section = int8_figures(target, {"eager": eager, "host_runtime": host}, [0.05, None])
    assert section["vs_eager"]["max_abs_error_lsb"] == pytest.approx(1.0)
    assert section["vs_eager"]["top1_agreement"] == 1.0
    assert section["vs_host_runtime"]["max_abs_error_lsb"] == pytest.approx(12.0)
    assert section["vs_host_runtime"]["top1_agreement"] == 0.0
    assert section["outputs_without_scale"] == [1]  # the float output (6.0 off) is not counted in LSB
    assert section["within_bound"] is True and section["bound_lsb"] == BOUND_LSB


def test_an_int8_program_beyond_the_bound_breaks_a_budget_without_numerics_limits() -> None:
    target, eager = [torch.tensor([0.0, 0.3])], [torch.tensor([0.0, 0.0])]  # 0.3 / 0.1 = 3 LSB > 2
    section = {"status": "computed", "int8": int8_figures(target, {"eager": eager}, [0.1])}
    assert section["int8"]["within_bound"] is False
    found = numerics_violations(section, None, None)
    assert len(found) == 1 and found[0][1] == pytest.approx(3.0) and found[0][3] == "LSB"
    within = {"status": "computed", "int8": int8_figures([torch.tensor([0.0, 0.2])], {"eager": eager}, [0.1])}
    assert numerics_violations(within, None, None) == []  # 2 LSB: at the bound, within it
