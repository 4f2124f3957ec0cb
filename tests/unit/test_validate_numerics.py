"""A profile's `numerics` section is checked before `hil compare` / `hil baseline update` read it: a list or a
string there crashed compare (AttributeError, exit 1: "regression") and was stored by baseline update.

Truths: the sections are written out by hand (as hil.numerics.check writes them), the messages too.
"""

from __future__ import annotations

import pytest
from test_validate import PROFILE, _edited

from hil.cli.main import exit_code_for
from hil.base.errors import FileContentError
from hil.records.validate.profile import check_baseline, check_profile

FIGURES = {"max_abs_error": 1.5e-8, "max_rel_error": 1.6e-7, "snr_db": 140.0, "cosine": 1.0, "bit_exact": False,
           "top1_agreement": 1.0}
NUMERICS = {"status": "computed", "inputs": {"source": "example inputs of cifar10", "tensors": []},
            "outputs": [{"index": 0, "dtype": "float32", "shape": [1, 10], "vs_eager": dict(FIGURES)}],
            "vs_eager": FIGURES, "vs_host_runtime": {"skipped": "not run: the host runtime has no neutron backend"}}
WITH_NUMERICS = {**PROFILE, "numerics": NUMERICS}


def test_sections_as_the_harness_writes_them_are_accepted():
    assert check_profile(WITH_NUMERICS, "p.json") is WITH_NUMERICS
    not_computed = {**PROFILE, "numerics": {"status": "not computed", "reason": "replay image", "inputs": None}}
    assert check_profile(not_computed, "p.json") is not_computed
    nan = {"max_abs_error": None, "max_rel_error": None, "snr_db": None, "cosine": None, "bit_exact": False,
           "non_finite": True}
    not_finite = {**PROFILE, "numerics": {"status": "computed", "vs_eager": nan, "vs_host_runtime": nan,
                                          "non_finite_outputs": [{"index": 0, "nan": 10, "inf": 0}]}}
    assert check_profile(not_finite, "p.json") is not_finite


@pytest.mark.parametrize(("path", "value", "says"), [
    (("numerics",), [], "numerics is a list, not an object"),
    (("numerics",), "computed", "numerics is 'computed', not an object"),
    (("numerics", "status"), "fine", "numerics.status is 'fine', not one of computed, not computed"),
    (("numerics", "status"), ..., "numerics.status is null, not a string"),
    (("numerics", "vs_eager"), [140.0], "numerics.vs_eager is a list, not an object"),
    (("numerics", "vs_eager", "snr_db"), "140 dB", "numerics.vs_eager.snr_db is '140 dB', not a number"),
    (("numerics", "vs_eager", "bit_exact"), "no", "numerics.vs_eager.bit_exact is 'no', not true or false"),
    (("numerics", "vs_eager", "max_abs_error"), -1.0, "numerics.vs_eager.max_abs_error is -1.0, not a number >= 0"),
    (("numerics", "vs_eager", "top1_agreement"), 100, "numerics.vs_eager.top1_agreement is 100.0, not a share"),
    (("numerics", "vs_host_runtime", "skipped"), 3, "numerics.vs_host_runtime.skipped is 3, not a string"),
    (("numerics", "outputs", 0), "float32", "numerics.outputs[0] is 'float32', not an object"),
    (("numerics", "outputs", 0, "vs_eager", "cosine"), [], "numerics.outputs[0].vs_eager.cosine is a list, not a"),
    (("numerics", "reason"), {}, "numerics.reason is an object, not a string"),
])
def test_a_numerics_field_of_the_wrong_kind_is_named(path, value, says):
    with pytest.raises(FileContentError) as refused:
        check_profile(_edited(path, value, WITH_NUMERICS), "run/profile.json")
    assert str(refused.value).startswith(f"run/profile.json: {says}")
    assert exit_code_for(refused.value) == 2 and "\n" not in str(refused.value)


def test_a_baseline_with_a_bad_numerics_is_refused_as_its_profile_is():
    baseline = {"schema": "et-hil/baseline/1", "provenance": {}, "profile": {**PROFILE, "numerics": "computed"}}
    with pytest.raises(FileContentError, match=r"^b.json: profile.numerics is 'computed', not an object$"):
        check_baseline(baseline, "b.json")
