"""An et-hil test writes JUnit XML without a warning on pytest's default `junit_family` (xunit2).

Why: et-hil's own figures already go where xunit2 allows them (suite properties: hil.regress.junit), yet
every et-hil test run with `--junitxml` warned "record_xml_attribute is incompatible with junit_family
'xunit2'". The warning was pytest-embedded's, a plugin et-hil shares sessions with
(tests/system/test_plugin_neighbours.py): its autouse fixture `parametrize_fixtures` takes its `app_path`
fixture, which asks for pytest's `record_xml_attribute` on every test of the session, whether the test uses
a pytest-embedded DUT or not. An et-hil test asked for nothing of pytest-embedded, so that warning (and
the fixture's "experimental feature" one) is about an attribute it never wanted; each et-hil test gets
`filterwarnings` marks silencing the two (a mark beats the
command line's `-W error` and the ini file's filters, as pytest documents). A test that asks for
`record_xml_attribute` itself, and every test that is not an et-hil one, keeps the warning.
"""

from __future__ import annotations

import inspect

import pytest

from hil.plugin.et_hil_items import uses_et_hil

# The messages pytest's `record_xml_attribute` fixture gives (`_pytest/junitxml.py`), as filters.
NEIGHBOURS_XML_ATTRIBUTE = ("ignore:record_xml_attribute is incompatible with junit_family:pytest.PytestWarning",
                            "ignore:record_xml_attribute is an experimental feature:pytest.PytestWarning")


def asks_for_it_itself(item: pytest.Item) -> bool:
    """Whether the test function names `record_xml_attribute` among its own arguments."""
    function = getattr(item, "function", None)
    try:
        return function is not None and "record_xml_attribute" in inspect.signature(function).parameters
    except (TypeError, ValueError):
        return False


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if uses_et_hil(item) and not asks_for_it_itself(item):
            item.add_marker(pytest.mark.filterwarnings(*NEIGHBOURS_XML_ATTRIBUTE))
