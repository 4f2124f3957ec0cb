"""The optional `modules` and `sources` of a profile event (hil.records.module_names): which of the
user's layers the event ran. Profiles written before they were kept have neither, and stay valid."""

from __future__ import annotations

import re
from typing import Any

from hil.records.validate.fields import Fields, at

_SOURCE = re.compile(r".+:\d+")  # `models.py:13`: a file's name and a line number


def check_event_places(fields: Fields, event: dict[str, Any], where: str) -> None:
    """`modules`: a list of module paths (`conv2`); `sources`: a list of `file:line`; either may be absent."""
    fields.items(event.get("modules"), at(where, "modules"), fields.a_text)
    for index, source in enumerate(fields.items(event.get("sources"), at(where, "sources"), fields.a_text)):
        if not _SOURCE.fullmatch(source):
            fields.wrong(source, at(at(where, "sources"), index), "a source line `file:line`")
