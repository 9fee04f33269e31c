"""The gateway report page read back the way a test needs it: its charts and their plotted points,
its totals table, and whether it is well-formed and loads nothing (stdlib html.parser only, so the
checks do not trust the code they check)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from html.parser import HTMLParser

VOID = {"meta", "br", "line", "circle", "polyline", "input", "img", "link", "hr", "path", "rect"}


@dataclass
class SvgChart:
    kind: str  # "tokens" or "cache"
    title: str = ""
    desc: str = ""
    points: dict[str, int] = field(default_factory=dict)  # series → points over all its polylines


@dataclass
class Page:
    charts: list[SvgChart] = field(default_factory=list)
    sessions: list[str] = field(default_factory=list)  # h2 "Session X" headings, as a reader sees them
    totals: dict[str | None, dict[str, str]] = field(default_factory=dict)  # data-session (None: total) → k → v
    captions: list[str] = field(default_factory=list)
    details_tables: int = 0
    text: str = ""

    def by_kind(self, kind: str) -> list[SvgChart]:
        return [c for c in self.charts if c.kind == kind]


class _Reader(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.page = Page()
        self.stack: list[str] = []
        self.row: str | bool | None = False  # False: not in a totals row
        self.text: list[str] = []
        self.in_title = self.in_desc = self.in_h2 = self.in_caption = False
        self.h2: list[str] = []
        self.caption: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        for name, value in attrs:  # nothing may be fetched: no resource attribute but a page anchor
            assert name not in {"src", "srcset", "action", "formaction", "xlink:href", "background"}, (name, value)
            assert not name.startswith("on"), name  # no event handler
            if name == "href":
                assert value is not None and value.startswith("#"), value
        assert tag not in {"script", "link", "iframe", "object", "embed", "img", "image", "use", "foreignobject"}, tag
        if tag not in VOID:
            self.stack.append(tag)
        if tag == "svg":
            self.page.charts.append(SvgChart(kind=(a.get("class") or "").split()[-1]))
        elif tag == "title" and "svg" in self.stack:
            self.in_title = True
        elif tag == "desc":
            self.in_desc = True
        elif tag == "polyline":
            series = a.get("data-series") or ""
            chart = self.page.charts[-1]
            chart.points[series] = chart.points.get(series, 0) + len((a.get("points") or "").split())
        elif tag == "tr" and "data-session" in a:
            self.row = a["data-session"]
            self.page.totals[self.row] = {}
        elif tag == "tr" and "total" in (a.get("class") or ""):
            self.row = None
            self.page.totals[None] = {}
        elif tag == "td" and self.row is not False and "data-k" in a:
            self.page.totals[self.row][a["data-k"] or ""] = a.get("data-v") or ""  # type: ignore[index]
        elif tag == "h2":
            self.in_h2, self.h2 = True, []
        elif tag == "figcaption":
            self.in_caption, self.caption = True, []
        elif tag == "table" and "details" in self.stack:
            self.page.details_tables += 1

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.handle_starttag(tag, attrs)

    def handle_endtag(self, tag: str) -> None:
        if tag in VOID:
            return
        assert self.stack and self.stack[-1] == tag, f"</{tag}> closes <{self.stack[-1] if self.stack else None}>"
        self.stack.pop()
        if tag == "title":
            self.in_title = False
        elif tag == "desc":
            self.in_desc = False
        elif tag == "tr":
            self.row = False
        elif tag == "h2":
            self.in_h2 = False
            heading = "".join(self.h2)
            if heading.startswith("Session "):
                self.page.sessions.append(heading.removeprefix("Session "))
        elif tag == "figcaption":
            self.in_caption = False
            self.page.captions.append("".join(self.caption))

    def handle_data(self, data: str) -> None:
        self.text.append(data)
        if self.in_title and self.page.charts:
            self.page.charts[-1].title += data
        if self.in_desc and self.page.charts:
            self.page.charts[-1].desc += data
        if self.in_h2:
            self.h2.append(data)
        if self.in_caption:
            self.caption.append(data)


def read_page(html: str) -> Page:
    """The page's parts; fails on an unclosed or mismatched tag, a resource reference, a script."""
    assert "http://" not in html and "https://" not in html
    assert not re.search(r"url\s*\(|@import", html, re.I)  # no CSS fetch either
    reader = _Reader()
    reader.feed(html)
    reader.close()
    assert reader.stack == [], f"unclosed: {reader.stack}"
    reader.page.text = "".join(reader.text)
    return reader.page
