"""Run folder names: the model's file stem and factory (or the built-in name) and the delegate, with a
suffix for a repeat within one test, against names written out by hand."""

from __future__ import annotations

from hil.plugin.run_names import RunNames, model_label, run_label


def test_a_file_model_is_named_by_its_stem_and_factory_and_a_built_in_by_its_name():
    assert model_label("models/a.py:factory") == "a-factory"
    assert model_label("/abs/path/b.py:build_small") == "b-build_small"
    assert model_label("cifar10") == "cifar10"
    assert run_label("models/a.py:factory", "neutron-sim") == "a-factory-neutron-sim"
    assert run_label("cifar10", None) == "cifar10-none" and run_label("cifar10", "none") == "cifar10-none"


def test_two_models_with_one_factory_name_get_two_names_and_a_repeat_gets_a_suffix():
    names = RunNames()
    taken = [names.take(run_label(m, "none")) for m in ("m/a.py:factory", "m/b.py:factory", "m/a.py:factory",
                                                          "m/a.py:factory")]
    assert taken == ["a-factory-none", "b-factory-none", "a-factory-none-2", "a-factory-none-3"]
    assert RunNames().take("a-factory-none") == "a-factory-none"  # each test starts afresh
