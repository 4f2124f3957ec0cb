"""The report's HTML read by Python's own HTML parser, as a browser's DOM would hold it: the text a person
sees (never tooltips, scripts or styles), each table's cells, and every element's tag and attributes."""

from __future__ import annotations

from dataclasses import dataclass, field
from html.parser import HTMLParser

_HIDDEN = {"title", "script", "style"}  # text a page does not show (an SVG <title> is a tooltip)
_VOID = {"wbr", "br", "img", "meta", "link", "input", "hr"}


@dataclass
class Dom:
    text: str = ""  # the shown text, blocks separated by newlines
    tables: list[list[list[str]]] = field(default_factory=list)  # per table, its rows of cell texts
    elements: list[tuple[str, dict[str, str]]] = field(default_factory=list)  # (tag, attributes) in order
    texts_of: dict[str, list[str]] = field(default_factory=dict)  # per class: the texts of elements of it


class _Reader(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.dom, self.hidden, self.parts = Dom(), 0, []
        self.row: list[str] | None = None
        self.cell: list[str] | None = None
        self.open: list[tuple[str, list[str], list[str]]] = []  # (tag, classes, text gathered)

    def handle_starttag(self, tag, attrs):
        attributes = {k: v or "" for k, v in attrs}
        self.dom.elements.append((tag, attributes))
        if tag in _VOID:
            return
        self.open.append((tag, attributes.get("class", "").split(), []))
        if tag in _HIDDEN:
            self.hidden += 1
        elif tag == "table":
            self.dom.tables.append([])
        elif tag == "tr":
            self.row = []
        elif tag in ("td", "th"):
            self.cell = []
        elif tag in ("p", "li", "h1", "h2", "h3", "div"):
            self.parts.append("\n")

    def handle_endtag(self, tag):
        if tag in _VOID:
            return
        while self.open:
            name, classes, gathered = self.open.pop()
            for css in classes:
                self.dom.texts_of.setdefault(css, []).append("".join(gathered))
            if self.open:
                self.open[-1][2].extend(gathered)
            if name in _HIDDEN:
                self.hidden -= 1
            if name in ("td", "th") and self.cell is not None and self.row is not None:
                self.row.append("".join(self.cell).strip())
                self.cell = None
            if name == "tr" and self.row is not None and self.dom.tables:
                self.dom.tables[-1].append(self.row)
                self.row = None
            if name == tag:
                break

    def handle_data(self, data):
        if self.hidden:
            return
        self.parts.append(data)
        if self.cell is not None:
            self.cell.append(data)
        if self.open:
            self.open[-1][2].append(data)


def read(html: str) -> Dom:
    reader = _Reader()
    reader.feed(html)
    reader.close()
    reader.dom.text = "".join(reader.parts)
    return reader.dom
