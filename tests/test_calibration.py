"""The calibration maths (ctx_lsp.core.calibration): median, nearest-rank p90 and spread of
actual / raw-estimate ratios."""

from __future__ import annotations

import statistics

from hypothesis import given
from hypothesis import strategies as st

from ctx_lsp.core.calibration import nearest_rank, ratio_stats

pairs = st.lists(st.tuples(st.integers(0, 100_000), st.integers(0, 200_000)), max_size=60)


def test_no_usable_report_gives_nothing():
    assert ratio_stats([]) is None
    assert ratio_stats([(0, 120)]) is None  # no estimate: no ratio


def test_known_values():
    stats = ratio_stats([(100, 140), (100, 120), (100, 100), (0, 999), (200, 260)])
    assert stats is not None
    assert stats.reports == 4
    assert stats.median == 1.25
    assert stats.p90 == 1.4
    assert abs(stats.spread - 0.4) < 1e-12


def test_nearest_rank_takes_a_value_never_interpolates():
    values = [float(v) for v in range(1, 11)]
    assert nearest_rank(values, 0.9) == 9.0
    assert nearest_rank(values, 0.5) == 5.0
    assert nearest_rank(values, 1.0) == 10.0
    assert nearest_rank([3.0], 0.9) == 3.0


@given(st.lists(st.floats(0, 1e6, allow_nan=False), min_size=1, max_size=80), st.floats(0.01, 1.0))
def test_nearest_rank_is_the_smallest_value_with_q_of_the_values_at_or_below_it(values, q):
    ordered = sorted(values)
    got = nearest_rank(ordered, q)
    assert got in ordered
    n = len(ordered)
    assert sum(v <= got for v in ordered) >= q * n - 1e-9
    smaller = [v for v in ordered if v < got]
    assert not smaller or sum(v <= smaller[-1] for v in ordered) < q * n + 1e-9


@given(pairs)
def test_stats_bound_each_other(reports):
    stats = ratio_stats(reports)
    ratios = sorted(a / e for e, a in reports if e > 0)
    if not ratios:
        assert stats is None
        return
    assert stats is not None and stats.reports == len(ratios)
    assert stats.median == statistics.median(ratios)
    assert ratios[0] <= stats.median <= ratios[-1]
    assert stats.p90 in ratios and stats.p90 >= nearest_rank(ratios, 0.5)
    assert stats.spread == ratios[-1] - ratios[0] >= 0
