"""Line charts as inline SVG for the gateway report: no script, no external style or font, so
the page is one file that loads nothing. Colours come from the page's CSS variables (light and
dark); every series also differs by its dash, so the chart reads without colour."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from html import escape

# Above this many requests a series is thinned to buckets, and the caption says so: a polyline of
# tens of thousands of vertices is slow to draw and no wider than the chart's pixels.
MAX_POINTS = 2000
MARKERS_UP_TO = 40  # few points get a dot each, so a single request is visible at all

WIDTH, HEIGHT = 760, 300
LEFT, RIGHT, TOP, BOTTOM = 68, 16, 40, 50
DASHES = {"solid": "", "dashed": "7 4", "dotted": "2 3"}


@dataclass(frozen=True, slots=True)
class Series:
    key: str  # a CSS class suffix: s-<key> sets its colour
    label: str  # the legend's words
    values: Sequence[float | None]  # one per request, in order; None is not drawn (no data)
    dash: str = "solid"


@dataclass(frozen=True, slots=True)
class Chart:
    svg: str
    points: int  # points drawn per series at most (= requests unless thinned)
    bucket: int  # requests per drawn point: 1 unless thinned


def line_chart(
    *,
    chart_id: str,
    kind: str,
    title: str,
    desc: str,
    x_label: str,
    y_label: str,
    series: Sequence[Series],
    y_format: Callable[[float], str],
    y_max: float | None = None,
    combine: Callable[[list[float]], float] = max,
) -> Chart:
    """One chart: x is the request's number in its session (1 = first), y a value per request.
    ``combine`` makes one point of a bucket's values when there are more than MAX_POINTS."""
    n = max((len(s.values) for s in series), default=0)
    bucket = math.ceil(n / MAX_POINTS) if n > MAX_POINTS else 1
    drawn = [_thin(s.values, bucket, combine) for s in series]
    top = y_max if y_max is not None else max((v for d in drawn for _, v in d if v is not None), default=0.0)
    y_ticks = _ticks(top)
    y_top = y_ticks[-1] or 1.0
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM

    def sx(x: float) -> float:
        return LEFT + (plot_w / 2 if n <= 1 else (x - 1) / (n - 1) * plot_w)

    def sy(y: float) -> float:
        return TOP + plot_h - y / y_top * plot_h

    out = [
        f'<svg class="chart {escape(kind)}" viewBox="0 0 {WIDTH} {HEIGHT}" role="img" '
        f'aria-labelledby="{chart_id}-t {chart_id}-d" preserveAspectRatio="xMidYMid meet">',
        f'<title id="{chart_id}-t">{escape(title)}</title>',
        f'<desc id="{chart_id}-d">{escape(desc)}</desc>',
    ]
    for t in y_ticks:
        y = _f(sy(t))
        out.append(f'<line class="grid" x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{y}" y2="{y}"/>')
        label = escape(y_format(t))
        out.append(f'<text class="tick" x="{LEFT - 6}" y="{y}" text-anchor="end" dy="0.32em">{label}</text>')
    base = TOP + plot_h
    out.append(f'<line class="axis" x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{base}" y2="{base}"/>')
    out.append(f'<line class="axis" x1="{LEFT}" x2="{LEFT}" y1="{TOP}" y2="{base}"/>')
    for t in _x_ticks(n):
        x = _f(sx(t))
        out.append(f'<line class="axis" x1="{x}" x2="{x}" y1="{base}" y2="{base + 4}"/>')
        out.append(f'<text class="tick" x="{x}" y="{base + 16}" text-anchor="middle">{t}</text>')
    out.append(
        f'<text class="label" x="{LEFT + plot_w / 2}" y="{HEIGHT - 8}" text-anchor="middle">{escape(x_label)}</text>'
    )
    out.append(
        f'<text class="label" transform="translate(14 {TOP + plot_h / 2}) rotate(-90)" '
        f'text-anchor="middle">{escape(y_label)}</text>'
    )
    for s, points in zip(series, drawn, strict=True):
        out.extend(_lines(s, [(sx(x), sy(v)) if v is not None else None for x, v in points]))
    out.extend(_legend(series))
    out.append("</svg>")
    return Chart(svg="\n".join(out), points=max((len(d) for d in drawn), default=0), bucket=bucket)


def _thin(
    values: Sequence[float | None], bucket: int, combine: Callable[[list[float]], float]
) -> list[tuple[int, float | None]]:
    """(request number, value) per drawn point; a bucket's point sits at its last request."""
    if bucket == 1:
        return [(i, v) for i, v in enumerate(values, 1)]
    out: list[tuple[int, float | None]] = []
    for start in range(0, len(values), bucket):
        part = [v for v in values[start : start + bucket] if v is not None]
        out.append((min(start + bucket, len(values)), combine(part) if part else None))
    return out


def _lines(s: Series, points: list[tuple[float, float] | None]) -> list[str]:
    """A polyline per run of points with data (a gap where there is none), a dot per point when
    there are few, and a dot for a point alone between gaps, which a polyline would not show."""
    dash = f' stroke-dasharray="{DASHES[s.dash]}"' if DASHES[s.dash] else ""
    runs: list[list[tuple[float, float]]] = [[]]
    for p in points:
        if p is None:
            if runs[-1]:
                runs.append([])
        else:
            runs[-1].append(p)
    out = []
    few = len(points) <= MARKERS_UP_TO
    for run in (r for r in runs if r):
        coords = " ".join(f"{_f(x)},{_f(y)}" for x, y in run)
        out.append(f'<polyline class="line s-{s.key}" data-series="{s.key}"{dash} points="{coords}"/>')
        if few or len(run) == 1:
            out.extend(f'<circle class="dot s-{s.key}" cx="{_f(x)}" cy="{_f(y)}" r="2.5"/>' for x, y in run)
    return out


def _legend(series: Sequence[Series]) -> list[str]:
    out, x = [], LEFT
    for s in series:
        dash = f' stroke-dasharray="{DASHES[s.dash]}"' if DASHES[s.dash] else ""
        out.append(f'<line class="line s-{s.key}"{dash} x1="{x}" x2="{x + 24}" y1="16" y2="16"/>')
        out.append(f'<text class="legend" x="{x + 30}" y="16" dy="0.32em">{escape(s.label)}</text>')
        x += 40 + int(6.6 * len(s.label))  # about the width of the label at the legend's font size
    return out


def _ticks(top: float) -> list[float]:
    """0 to a round number at or above ``top``, in four or five round steps."""
    if top <= 0:
        return [0.0, 1.0]
    raw = top / 4
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 2.5, 5, 10) if m * power >= raw)
    count = math.ceil(top / step - 1e-9)
    return [i * step for i in range(count + 1)]


def _x_ticks(n: int) -> list[int]:
    """Request numbers to label: the first, then round multiples, about seven in all."""
    if n <= 1:
        return [1] if n else []
    raw = (n - 1) / 7
    power = 10 ** math.floor(math.log10(raw)) if raw >= 1 else 1
    step = max(1, next(int(m * power) for m in (1, 2, 5, 10) if m * power >= raw))
    return [1, *(t for t in range(step, n + 1, step) if t - 1 >= step / 2)]


def _f(v: float) -> str:
    return f"{v:.1f}".removesuffix(".0")
