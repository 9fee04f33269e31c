"""The corpus of real tool outputs (benchmarks/tool_corpus/): for every case, what the request
needs survives the shrink, a file read is never shrunk, the same output gives the same bytes, and
each needle can be brought back alone with ``expand(id, match=…)``."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

from tool_outputs import COUNT, load, run_case  # noqa: E402

from ctx_lsp.core.shrink.excerpt import excerpt  # noqa: E402

CASES = load()


def test_the_corpus_is_big_and_varied() -> None:
    assert len(CASES) >= 40
    assert len({c.kind for c, _ in CASES}) >= 8 and len({c.language for c, _ in CASES}) >= 7


@pytest.mark.parametrize(("case", "text"), CASES, ids=[c.id for c, _ in CASES])
def test_every_needle_is_kept(case, text: str) -> None:
    out, _ = run_case(case, text)
    if case.kind == "file_read":
        assert out is None  # what the model reads reaches it whole
        return
    shown = out if out is not None else text
    assert [n for n in case.needles if n not in shown] == []
    if out is not None:
        assert COUNT(out) < COUNT(text)
        assert run_case(case, text)[0] == out  # the same bytes every time: the provider's cache


@pytest.mark.parametrize(("case", "text"), CASES[::5], ids=[c.id for c, _ in CASES[::5]])
def test_a_needle_comes_back_alone(case, text: str) -> None:
    needle = case.needles[0]
    part = excerpt(text, match=re.escape(needle), context=2)
    assert part.matches and needle in part.text and len(part.text) < len(text)
