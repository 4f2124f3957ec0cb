"""A run's key figures in the JUnit XML, with or without pytest-xdist.

pytest writes the XML in one process: the session's own, or under xdist the controller, while the
tests run in workers. What a worker sets on a test's report travels to the controller (xdist
serialises every attribute of it), but `record_testsuite_property` called in a worker writes nowhere,
so figures recorded that way vanished under `-n 2`. The figures therefore ride on the report
(`REPORT_ATTR`), and the process that writes the XML turns them into suite properties named
`<figure>@<test id>` when the report arrives.

Suite properties, not per-testcase ones: xunit2, pytest's default JUnit family, allows no
<properties> inside a <testcase> (pytest warns that `record_property` is incompatible with it).
Under the `legacy` and `xunit1` families, which allow them, each figure is also a property of its
testcase (the test's `user_properties`, as `record_property` writes them, which xdist carries too).
"""

from __future__ import annotations

import pytest

# Attribute of a TestReport holding [name, value] pairs of key figures.
REPORT_ATTR = "hil_junit_properties"
TESTCASE_FAMILIES = ("legacy", "xunit1")
# The user property a test records its own run folder under (read by hil.plugin.regress_hooks).
ARTIFACTS_PROPERTY = "hil_artifacts"


def attach(item: pytest.Item, report: pytest.TestReport, props: list[tuple[str, str]]) -> None:
    """Put `props` on the report (for suite properties) and, where the family allows, on the testcase."""
    carried = list(getattr(report, REPORT_ATTR, None) or [])
    carried += [[f"{name}@{item.nodeid}", str(value)] for name, value in props]
    setattr(report, REPORT_ATTR, carried)
    # pytest writes a testcase's properties from its teardown report, which copies the item's
    # `user_properties` (what `record_property` appends to, and what xdist carries)
    if item.config.getini("junit_family") in TESTCASE_FAMILIES:
        item.user_properties.extend((name, str(value)) for name, value in props)
    else:  # a test's own `hil_artifacts` record would be an xunit2-invalid testcase property: its folder
        # is a suite property now
        item.user_properties[:] = [p for p in item.user_properties if p[0] != ARTIFACTS_PROPERTY]


class SuiteProperties:
    """A plugin, registered per session: in the process that writes the JUnit XML, each report's figures
    become suite properties as the report arrives (a worker has no XML writer and adds nothing)."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        props = getattr(report, REPORT_ATTR, None)
        if not props:
            return
        try:
            from _pytest.junitxml import xml_key  # pytest keeps its XML writer here (no public accessor)
        except ImportError:  # a pytest without it: no XML writer to reach
            return
        writer = self.config.stash.get(xml_key, None)
        if writer is not None:
            for name, value in props:
                writer.add_global_property(name, value)
