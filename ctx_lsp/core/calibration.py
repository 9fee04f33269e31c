"""The estimator's calibration maths: how far measured input tokens (usage reports) are from
what was estimated.

Each usage report gives one ratio, actual / raw estimate (the estimate before any calibration
factor). Over a model's reports: the median is the typical factor, the 90th percentile the
conservative one, and the spread (largest − smallest) says how much to trust either.

The factor planning uses is the median of the model's latest ``WINDOW`` reports, clamped to
[``FLOOR``, ``CEILING``]: a few odd requests (a provider that counts something we cannot see,
a retried request billed twice) can neither move it far nor keep it moved — the next ``WINDOW``
ordinary reports replace them, and no report can make an estimate more than ``CEILING`` times the
text's token count. Images and documents are counted the providers' way (``core.media``) before a
ratio is taken, so screenshots are not outliers to begin with.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Sequence

import msgspec

WINDOW = 64  # the latest reports of a model the factor is the median of
FLOOR, CEILING = 0.5, 2.0  # the factor's bounds: tokenizers differ by ~0.7-1.5x on text and code


def factor(recent: Sequence[float]) -> float | None:
    """The calibration factor from a model's latest ratios (any order): their median, clamped."""
    if not recent:
        return None
    return round(min(CEILING, max(FLOOR, statistics.median(recent))), 3)


class RatioStats(msgspec.Struct, frozen=True, kw_only=True):
    reports: int
    median: float
    p90: float
    spread: float


def nearest_rank(ordered: Sequence[float], q: float) -> float:
    """The ``q`` quantile (0 < q <= 1) of a non-empty ascending sequence, by nearest rank: the
    smallest value with at least ``q`` of the values at or below it (never interpolated)."""
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))]


def ratio_stats(reports: Iterable[tuple[int, int]]) -> RatioStats | None:
    """Statistics of actual / estimate over (raw estimate, actual) pairs; pairs without a
    positive estimate say nothing and are left out. None when no pair is left."""
    return stats_of(sorted(actual / estimate for estimate, actual in reports if estimate > 0))


def _sorted_median(ordered: Sequence[float]) -> float:
    """``statistics.median`` of values already in order, without sorting a copy: a plan asks
    several times, over every report the model ever had (thousands in a store a few weeks old)."""
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2


def stats_of(ratios: Sequence[float]) -> RatioStats | None:
    """``ratio_stats`` of ratios already in ascending order (kept sorted as reports arrive)."""
    if not ratios:
        return None
    return RatioStats(
        reports=len(ratios),
        median=_sorted_median(ratios),
        p90=nearest_rank(ratios, 0.9),
        spread=ratios[-1] - ratios[0],
    )
