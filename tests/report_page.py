"""The gateway report page read back the way a test needs it: its charts and their plotted points,
its totals table, its runs' labels and each request's +ctx, and whether it is well-formed and loads
nothing (stdlib html.parser only, so the checks do not trust the code they check); and the page
as headless Chromium draws it (``screenshot``)."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import re
import shutil
import tempfile
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path

import aiohttp

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
    sessions: list[str] = field(default_factory=list)  # each run's conversation session, as its h2 names it
    runs: list[str] = field(default_factory=list)  # each run's heading, as a reader sees it
    asked: list[str] = field(default_factory=list)  # each run's first user line, as shown under its heading
    verdict: str = ""  # the line on top
    # per run, each request's reason for what ctx_lsp added and the words saying it (a run of one
    # request says it in a line of its own, the others in their table of requests)
    contexts: list[list[tuple[str, str]]] = field(default_factory=list)
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
        self.grab: str | None = None  # "verdict", "asked" or "ctx": a <p> or <td> whose text is kept
        self.grabbed: list[str] = []

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
            if "data-session" in a:
                self.page.sessions.append(a["data-session"] or "")
        elif tag == "p" and (a.get("class") or "") in ("verdict", "asked"):
            self.grab, self.grabbed = a.get("class"), []
        elif tag == "td" and "data-ctx" in a:
            self.grab, self.grabbed = "ctx", [a["data-ctx"] or "", ""]
        elif tag == "p" and "data-ctx" in a:  # a run of one request: its line, no table
            self.page.contexts.append([])
            self.grab, self.grabbed = "ctx", [a["data-ctx"] or "", ""]
        elif tag == "figcaption":
            self.in_caption, self.caption = True, []
        elif tag == "table" and "details" in self.stack:
            self.page.details_tables += 1
            if "requests" in (a.get("class") or ""):
                self.page.contexts.append([])

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
            if heading.startswith("Run "):
                self.page.runs.append(heading)
        elif tag in ("p", "td") and self.grab is not None:
            if self.grab == "verdict":
                self.page.verdict = "".join(self.grabbed)
            elif self.grab == "asked":
                self.page.asked.append("".join(self.grabbed))
            else:
                self.page.contexts[-1].append((self.grabbed[0], "".join(self.grabbed[1:])))
            self.grab = None
        elif tag == "figcaption":
            self.in_caption = False
            self.page.captions.append("".join(self.caption))

    def handle_data(self, data: str) -> None:
        self.text.append(data)
        if self.grab is not None:
            self.grabbed.append(data)
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


# ---- a real browser: headless Chromium over the DevTools protocol ----------------------------------


def chromium() -> str | None:
    """The Chromium on this machine (Debian's ``chromium``), or None."""
    return next((p for p in map(shutil.which, ("chromium", "chromium-browser", "google-chrome")) if p), None)


async def screenshot(html: Path, png: Path, width: int = 1280) -> int:
    """Open ``html`` (a file) in headless Chromium, ``width`` CSS pixels wide, and save the whole
    page as ``png``; returns the page's height in CSS pixels. Chromium's own profile and HOME are
    a scratch folder, its background traffic is off, and the page itself may load nothing (CSP)."""
    exe = chromium()
    assert exe is not None, "no chromium"
    with tempfile.TemporaryDirectory(prefix="ctx-report-chromium-") as scratch:
        proc = await asyncio.create_subprocess_exec(
            exe,
            "--headless=new",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--remote-debugging-address=127.0.0.1",
            "--remote-debugging-port=0",
            f"--user-data-dir={scratch}",
            "about:blank",
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.PIPE,
            env={**os.environ, "HOME": scratch},
        )
        try:
            async with asyncio.timeout(60):
                return await _shoot(proc, html, png, width)
        finally:
            proc.terminate()
            await proc.wait()


async def _shoot(proc: asyncio.subprocess.Process, html: Path, png: Path, width: int) -> int:
    assert proc.stderr is not None
    while True:  # "DevTools listening on ws://127.0.0.1:PORT/devtools/browser/…"
        line = (await proc.stderr.readline()).decode()
        assert line, "chromium exited before it listened"
        if found := re.search(r"ws://127\.0\.0\.1:(\d+)/", line):
            port = found.group(1)
            break
    async with aiohttp.ClientSession() as http:
        async with http.put(f"http://127.0.0.1:{port}/json/new?about:blank") as r:
            target = await r.json()
        async with http.ws_connect(target["webSocketDebuggerUrl"], max_msg_size=0) as ws:
            ids = iter(range(1, 1_000_000))

            async def call(method: str, **params: object) -> dict:
                n = next(ids)
                await ws.send_json({"id": n, "method": method, "params": params})
                async for msg in ws:
                    data = json.loads(msg.data)
                    if data.get("id") == n:
                        assert "error" not in data, data
                        return data["result"]
                raise AssertionError("the DevTools connection closed")

            await call("Emulation.setDeviceMetricsOverride", width=width, height=900, deviceScaleFactor=1, mobile=False)
            await call("Page.enable")
            await call("Page.navigate", url=html.resolve().as_uri())
            while (await call("Runtime.evaluate", expression="document.readyState"))["result"]["value"] != "complete":
                await asyncio.sleep(0.1)
            metrics = await call("Page.getLayoutMetrics")
            height = int(metrics["cssContentSize"]["height"])
            shot = await call(
                "Page.captureScreenshot",
                format="png",
                captureBeyondViewport=True,
                clip={"x": 0, "y": 0, "width": width, "height": height, "scale": 1},
            )
    png.parent.mkdir(parents=True, exist_ok=True)
    png.write_bytes(base64.b64decode(shot["data"]))
    return height
