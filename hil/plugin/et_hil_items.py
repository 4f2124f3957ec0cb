"""Which tests are et-hil's: the plugin's hooks act on those only, and leave a project's other tests as they
would be without et-hil. Apart from hil.plugin.hooks so the hooks' helpers (hil.plugin.neighbour_warnings) can
ask it without importing the hooks back."""

from __future__ import annotations

import pytest

MARKERS = ("device", "hil_budget", "hil_requires")


def uses_et_hil(item: pytest.Item) -> bool:
    """Whether `item` asked for et-hil (a `hil_*` fixture or one of MARKERS): the plugin's hooks act on those
    tests only, and leave a project's other tests as they would be without et-hil."""
    names = getattr(item, "fixturenames", ())
    return any(name.startswith("hil_") for name in names) or any(item.get_closest_marker(m) is not None for m in MARKERS)
